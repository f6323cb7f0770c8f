#!/usr/bin/env bash
# Install the book's JavaScript from npm (pinned in web/package-lock.json) and copy what the pages
# load into _static_offline/, which _config.yml serves through html_static_path. With these the
# built book typesets math and shows widgets without any network: MathJax 3, RequireJS and the
# ipywidgets HTML manager would otherwise come from CDNs.
# (Not into _static/: Jupyter Book 1 adds every .js file under _static/ to every page.)
set -euo pipefail
cd "$(dirname "$0")/.."
out=_static_offline
if [ ! -d web/node_modules/mathjax ] || [ web/package-lock.json -nt web/node_modules ]; then
  npm ci --prefix web --no-audit --no-fund --loglevel=error
  touch web/node_modules
fi
rm -rf "$out" && mkdir -p "$out/mathjax"
cp -r web/node_modules/mathjax/es5/. "$out/mathjax/"
cp web/node_modules/requirejs/require.js "$out/require.js"
cp web/mathjax2-shim.js "$out/mathjax2-shim.js"
cp web/book.css "$out/book.css"
cp web/node_modules/@jupyter-widgets/html-manager/dist/embed-amd.js "$out/embed-amd.js"
# The widget manager's stylesheet asks for its icon fonts at @jupyter-widgets/html-manager/dist/,
# relative to the page; widget pages live in chapters/, so html_extra_path puts them there.
fonts=_widget_fonts/chapters/@jupyter-widgets/html-manager/dist
rm -rf _widget_fonts && mkdir -p "$fonts"
cp web/node_modules/@jupyter-widgets/html-manager/dist/*.{woff2,woff,ttf,eot,svg} "$fonts/"
echo "offline assets in $out/: $(du -sh "$out" | cut -f1)"
