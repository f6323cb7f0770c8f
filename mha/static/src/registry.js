// The registries the views and computes fill: a canvas view draws on a canvas and returns its
// description (CANVAS_VIEWS), a DOM view builds elements (DOM_VIEWS), a compute makes a state
// from a figure's data (COMPUTE, for a figure with too many states to list). main.js registers
// the engine's views; a package's own bundle registers more through extend.js.
export var CANVAS_VIEWS = {},
  DOM_VIEWS = {},
  COMPUTE = {};

var counter = 0;
// an id for a control: unique in the page
export function nextId() {
  return ++counter;
}
