// A view's mask: d.masked is one string per query row ("1" = blocked by the mask) for every grid
// alike, or one such list per grid (a head_view mask that differs between heads); absent when
// nothing is blocked. Pure functions, run by the tests in Node.js.
export function maskRows(masked, h) {
  if (!masked || !masked.length) return null;
  return typeof masked[0] === "string" ? masked : masked[h] || null;
}
export function isMasked(masked, h, i, j) {
  var rows = maskRows(masked, h);
  return !!rows && rows[i].charAt(j) === "1";
}
