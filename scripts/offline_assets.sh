#!/usr/bin/env bash
# Install the book's JavaScript from npm (pinned in web/package-lock.json) and copy what the pages
# load into _static_offline/, which _config.yml serves through html_static_path. With these the
# built book typesets math without any network: MathJax 3 would otherwise come from a CDN.
# (axe-core, also from npm, is injected into pages only by the browser tests.)
# (Not into _static/: Jupyter Book 1 adds every .js file under _static/ to every page.)
set -euo pipefail
cd "$(dirname "$0")/.."
out=_static_offline
if [ ! -d web/node_modules/mathjax ] || [ ! -d web/node_modules/axe-core ] || [ web/package-lock.json -nt web/node_modules ]; then
  npm ci --prefix web --no-audit --no-fund --loglevel=error
  touch web/node_modules
fi
rm -rf "$out" && mkdir -p "$out/mathjax"
cp -r web/node_modules/mathjax/es5/. "$out/mathjax/"
cp web/book.css "$out/book.css"
echo "offline assets in $out/: $(du -sh "$out" | cut -f1)"
