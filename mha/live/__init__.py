"""Live figures: a figure declared as data in Python, drawn in the page by one front end.

``mha.live.figure`` declares a figure (controls, views, every state), ``mha.live.views`` builds
the views' data, the front end (ES modules in ``mha/static/src/``, bundled into
``mha/static/live.js``: ``mha.live.bundles``) draws them without a kernel: in the built book and in
every Jupyter front end. ``mha.head_view`` is such a figure for any model's weights; the book's
own figures are in ``mha_book.figures``.
"""
