// An extension: a package's own bundle (mha_book's: the explorer's and the Shakespeare model's
// in-page computes) adds computes or views to the engine's registries. Its script runs before
// the engine's in a figure's HTML (mha.live.bundles), and a page may hold several copies of
// both, so an extension is kept on the page (window.mhaLiveExtensions) and applied to the
// engine now if one is there, and by every engine that starts later (main.js).
// register(live) receives window.mhaLive: {compute, views, domViews, ...}.
export function extend(name, version, register) {
  var all = (window.mhaLiveExtensions = window.mhaLiveExtensions || []);
  var known = all.some(function (e) {
    return e.name === name && e.version >= version;
  });
  if (known) return; // another figure's copy of the same bundle registered it
  var ext = { name: name, version: version, register: register };
  all.push(ext);
  if (window.mhaLive && window.mhaLive.extend) window.mhaLive.extend(ext);
}
