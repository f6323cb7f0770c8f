// The ipywidgets HTML manager typesets widget labels with MathJax 2's API
// (MathJax.Hub.Queue(["Typeset", MathJax.Hub, element])), but the book loads MathJax 3, which has
// no MathJax.Hub: every widget would throw. Forward those calls to MathJax 3's typesetPromise.
// Loaded deferred after MathJax, so it runs before the widgets render.
(function () {
  var mj = window.MathJax;
  if (!mj || mj.Hub || typeof mj.typesetPromise !== "function") {
    return;
  }
  mj.Hub = {
    Queue: function (command) {
      var element = Array.isArray(command) ? command[2] : undefined;
      mj.typesetPromise(element ? [element] : undefined).catch(function (error) {
        console.warn("MathJax could not typeset a widget label:", error);
      });
    },
  };
})();
