// The book's own bundle (mha_book/static/book.js, built by frontend/build.mjs): the in-page
// computes of the book's figures, registered with the engine (mha/static/src/extend.js).
// mha_book.figures registers this bundle with mha.live on import, so a figure whose compute is
// one of these carries it in its HTML (before the engine's script).
//   explorer     chapter 07's explorer (mha_book.figures.explorer): attention from exported
//                queries and keys (explorer.js, attention.js)
//   split-heads  chapter 05's split and merge of heads (mha_book.figures.batched_heads)
//   text-heads   the Shakespeare model run in the page (mha_book.figures.shakespeare_heads: lm.js,
//                lm_math.js, text_heads.js)
import { extend } from "../../../mha/static/src/extend.js";
import { attention, decode } from "./attention.js";
import { explorer } from "./explorer.js";
import { splitHeads } from "./split_heads.js";
import { textHeads } from "./text_heads.js";

extend("mha_book", 1, function (live) {
  live.compute.explorer = explorer;
  live.compute["split-heads"] = splitHeads;
  live.compute["text-heads"] = textHeads;
  live.attention = attention;
  live.decode = decode;
});
