"""The live figures' styles: one <style> element, inlined before every figure (the same in the
built book, JupyterLab, Notebook, VS Code and Colab).

The controls sit in a bar that stays in view (``.mha-bar``, position: sticky) while the
reader scrolls to the view a control changes: below the book's own sticky header
(``--mha-top``, set by mount.js), on the page's background (``--mha-bg``: the book's, then
JupyterLab's, then the browser's for the figure's colour scheme); the readout scrolls with the
views. An output box that scrolls or clips (MyST-NB's output, JupyterLab's output area and its
child: overflow auto or hidden) would hold the bar in place, so around a figure it does not;
the figure scrolls its own wide views (``.mha-views``), and what the bar covers is skipped when
the page scrolls to a view's element (``scroll-margin-top``, ``--mha-bar-h``). On a narrow
figure (``.mha-narrow``, under 600 px: a phone) a bar of many controls is split into pages
behind tabs (``.mha-tabs``, pages.js), so that it never scrolls inside itself; its height cap
(half the screen or 24em, then a soft shadow at an edge where more controls lie) is only a
fallback. On a touch screen every control is a 44 px target.
"""

CSS = """<style>
.mha-live{font-family:sans-serif;font-size:14px;margin:.6em 0;color:inherit;max-width:100%}
.mha-live .mha-note{border-left:4px solid #3b6ea5;padding:.4em .7em;margin:.3em 0 .6em;
 background:rgba(59,110,165,.08)}
.mha-live .mha-controls{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(20em,100%),1fr));
 gap:.4em 1.2em;margin:.4em 0}
.mha-live .mha-control{display:flex;align-items:center;gap:.5em;min-height:32px}
.mha-live .mha-control label{min-width:7.5em}
.mha-live .mha-step{grid-column:1/-1;flex-wrap:wrap}
.mha-live .mha-control input[type=range]{flex:1;min-width:6em;max-width:12em;min-height:28px}
.mha-live .mha-control input[type=checkbox]{width:22px;height:22px}
.mha-live .mha-control select{min-height:30px;min-width:0;max-width:12em;font-size:14px}
.mha-live .mha-control button{min-width:32px;min-height:32px;font-size:14px}
.mha-live .mha-control output{min-width:3.5em;font-variant-numeric:tabular-nums}
.mha-live .mha-text{grid-column:1/-1;flex-wrap:wrap;align-items:flex-start}
.mha-live .mha-control textarea{flex:1 1 16em;min-width:0;max-width:100%;box-sizing:border-box;
 font:14px/1.35 monospace;padding:.3em;color:inherit;background:transparent;resize:vertical}
.mha-live :disabled,.mha-live [aria-disabled="true"]{opacity:.5;cursor:not-allowed}
.mha-live .mha-readout{margin:.3em 0;min-height:1.4em;font-weight:600}
.mha-live{--mha-bg:var(--pst-color-background,var(--jp-layout-color0,Canvas))}
.mha-live .mha-bar{position:sticky;top:var(--mha-top,0px);z-index:3;max-height:min(50vh,24em);
 overflow-y:auto;overscroll-behavior:contain;padding:0 .2em;
 box-shadow:0 5px 5px -5px rgba(0,0,0,.35);background:
 linear-gradient(var(--mha-bg) 30%,transparent) top/100% 2.5em no-repeat local,
 linear-gradient(transparent,var(--mha-bg) 70%) bottom/100% 2.5em no-repeat local,
 radial-gradient(farthest-side at 50% 0,rgba(127,127,127,.5),transparent) top/100% 12px
 no-repeat scroll,radial-gradient(farthest-side at 50% 100%,rgba(127,127,127,.5),transparent)
 bottom/100% 12px no-repeat scroll,var(--mha-bg)}
.output.text_html:has(.mha-live),.jp-OutputArea:has(.mha-live),
.jp-OutputArea-child:has(.mha-live),.jp-OutputArea-output:has(.mha-live){overflow:visible}
.mha-live .mha-views,.mha-live .mha-views *{scroll-margin-top:calc(var(--mha-top,0px) +
 var(--mha-bar-h,0px) + 8px)}
.mha-live canvas{display:block;max-width:100%;height:auto;margin:.3em 0}
.mha-live [hidden]{display:none!important}
.mha-live .mha-views{display:flex;flex-wrap:wrap;gap:.4em 1.5em;align-items:flex-start;
 overflow-x:auto}
.mha-live table{border-collapse:collapse;font-size:13px;margin:.4em 0}
.mha-live td,.mha-live th{padding:0 .6em;text-align:right}
.mha-live caption{text-align:left;color:inherit}
.mha-live .mha-error,.mha-live .mha-alert{color:#b00020}
.mha-live .mha-alert{margin:0;padding:.2em .2em .4em;font-weight:600;position:sticky;z-index:3;
 top:calc(var(--mha-top,0px) + var(--mha-bar-h,0px));background:var(--mha-bg)}
.mha-live .mha-alert:empty{display:none}
.mha-live .mha-tabs{display:flex;gap:.3em;margin:.3em 0 .2em}
.mha-live .mha-tabs button{flex:1 1 0;min-height:32px;font-size:13px;padding:.2em .4em;
 border:1px solid rgba(127,127,127,.6);border-radius:.3em;background:transparent;color:inherit}
.mha-live .mha-tabs button[aria-selected=true]{border-color:#3b6ea5;border-width:2px;
 font-weight:700;background:rgba(59,110,165,.14)}
html[data-theme=dark] .mha-live .mha-error,html[data-theme=dark] .mha-live .mha-alert{
 color:#ff8a80}
@media (max-width:600px){.mha-live .mha-control textarea{max-height:4.6em}}
@media (pointer:coarse){.mha-live .mha-control,.mha-live .mha-control select,
 .mha-live .mha-control input[type=range]{min-height:44px}
 .mha-live .mha-control button,.mha-live .mha-control select{min-width:44px;min-height:44px}
 .mha-live .mha-tabs button{min-height:44px}
 .mha-live .mha-control input[type=checkbox]{width:28px;height:28px}}
</style>"""
