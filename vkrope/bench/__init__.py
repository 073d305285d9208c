"""The benchmarks (`vkrope bench`) and what only they use: `kernel` (the
interleaved kernel against the driver's ceilings and the competitors,
its JSON and chart), `family` (the table operators), `nd` (N-D / axial),
`decode` (decode-sized calls and their host overhead), `overhead` (each tiny call against an empty
submission, the floor), `step` (the fused
decode step against its unfused parts), `baselines` (numpy's RoPE) and
`timing` (a request's kernel seconds and the two ceilings, timed with
timestamp queries). The library's core imports none of them."""
