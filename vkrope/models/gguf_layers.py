"""Which layers of a GGUF model rotate, which are sliding, and the sliding
layers' base and scale, as llama.cpp decides them: the statements and
conditions scripts/gguf_arch_table.py read from llama.cpp's source
(vkrope/data/gguf_archs.json), evaluated over the file's metadata.

The table's conditions are Python expressions over llama_hparams' names;
gguf_program.py's `Hparams.evaluate` runs them with a whitelist of syntax
(no attribute access, no builtins), and a name the file and the table do
not give raises `Unknown`: what depends on it is then refused, never
guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from .gguf_context import Rotation, Unknown, context_fields, rotation
from .gguf_program import Hparams, Refused, check_type, run, table


@dataclass(frozen=True)
class LayerPlan:
    """llama.cpp's per-layer decisions for one file."""

    n_layer: int
    rotates: tuple[bool, ...] | None  # per layer whether its graph applies RoPE; None when unknown
    sliding: tuple[bool, ...] | None  # per layer llama.cpp's is_swa; None when unknown
    use_mrope: bool
    unknown: str = ""  # why rotates or sliding is unknown
    rotations: tuple[Rotation | None, ...] | None = None  # per layer its rope call's arguments (None: no rope call)
    rotations_unknown: str = ""  # why rotations is None
    tensors: tuple[str, ...] = ()  # the factor tensors the loader creates for this file (on some layer, or unknown)
    sizes: tuple[tuple[str, tuple[int, ...]], ...] = ()  # each created tensor's lengths as created, where known
    required: tuple[str, ...] = ()  # the created tensors the loader requires (Gemma 4's rope_freqs), where known
    split: tuple[tuple[int, str], ...] = ()  # (layer, how) where its parts' calls differ and no part was named


def parts_of(entry: dict) -> tuple[str, ...]:
    """The parts an architecture's graph rotates, each with calls of its own (DeepSeek-V3.2's "attention" and
    "indexer", the table's part of each rope form); () where it rotates its attention alone."""
    named = {f.get("part", "attention") for f in entry.get("rope_forms") or ()}
    return tuple(sorted(named)) if len(named) > 1 else ()


_MODE_PAIRS = {"LLAMA_ROPE_TYPE_NEOX": "neox", "GGML_ROPE_TYPE_NEOX": "neox", "LLAMA_ROPE_TYPE_NORM": "norm",
               "GGML_ROPE_TYPE_NORM": "norm"}  # (a call's mode given as a constant, not the model's rope type)


def pairs_of(call: Rotation, entry: dict) -> Any:
    """The pairs a rope call turns: the model's rope type (the table's `pairs`) or the constant the call names."""
    return entry["pairs"] if call.mode == "rope_type" else _MODE_PAIRS.get(call.mode, call.mode)


def plan(arch: str, entry: dict, kv: Mapping[str, Any], types: dict[str, str] | None = None,
         complete: bool = True, part: str | None = None) -> LayerPlan:
    """Run the table's statements for `arch` over the file's metadata `kv` (keys without the arch
    prefix; `types`: each one's GGUF type, where a file gave them) and evaluate its rotation condition per
    layer; the rope calls of `part` (parts_of; None: every part's, one way, or refused)."""
    check_types(types, entry, complete)
    hp = _start(kv, _layer_count(kv), types, entry)  # (llama.cpp requires block_count: a file without is refused)
    why = ""
    try:
        for _ in _program(hp, entry, kv):
            pass
        sliding: tuple[bool, ...] | None = tuple(bool(hp.evaluate("is_swa(il)", il=i))
                                                 for i in range(hp.fields["n_layer"]))
        check_reads(hp, kv, entry, complete)
    except Unknown as exc:
        sliding, why = None, f"llama.cpp's load_arch_hparams for {arch!r}: {exc}"
    rotates = None
    if sliding is not None or "is_swa" not in entry["rotates"]:
        try:
            rotates = tuple(bool(hp.evaluate(entry["rotates"], il=i)) for i in range(hp.fields["n_layer"]))
        except Unknown as exc:
            why = why or f"llama.cpp's graph for {arch!r} rotates where {entry['rotates']} ({exc})"
    rotations, rot_why, split = _rotations(arch, entry, kv, hp.fields["n_layer"],
                                           hp if sliding is not None else None, part)
    if part is not None and parts_of(entry) and rotates is not None:  # (a part may run on some layers only:
        # dots.ocr's indexer on its full ones)
        try:
            rotates = tuple(r and any(hp.evaluate(f["guard"], il=i) for f in entry.get("rope_forms") or ()
                                      if f.get("part", "attention") == part) for i, r in enumerate(rotates))
        except Unknown as exc:
            rotates, why = None, why or f"which layers run its {part} is unknown for {arch!r}: {exc}"
    return LayerPlan(hp.fields["n_layer"], rotates, sliding, _use_mrope(kv, entry), why, rotations, rot_why,
                     *_created(entry, hp), split=split)


def _created(entry: dict, hp: Hparams) -> tuple[tuple[str, ...], tuple[tuple[str, tuple[int, ...]], ...],
                                                tuple[str, ...]]:
    """The factor tensors the architecture's loader creates for this file: where the table's condition holds
    on some layer, or cannot be decided (Llama: the longrope pair only for rope.scaling.type longrope); the
    lengths each is created with on those layers, where the table's size and the condition are known; and
    those it creates as required (the table's factor_required), on a layer the condition decides."""
    out, sizes, required = [], [], []
    for name, cond in (entry.get("factor_tensors") or {}).items():
        try:
            layers = [i for i in range(hp.fields["n_layer_all"]) if hp.evaluate(cond, i=i, il=i)]
        except Unknown:
            out.append(name)
            continue
        if layers:
            out.append(name)
            if (entry.get("factor_required") or {}).get(name) == "True":
                required.append(name)
            try:
                size = (entry.get("factor_sizes") or {}).get(name, "unknown")
                sizes.append((name, tuple(sorted({int(hp.evaluate(size, i=i, il=i)) for i in layers}))))
            except (Unknown, TypeError, ValueError):
                pass  # (a size the table cannot say, or an expression without a value here: left unchecked)
    return tuple(out), tuple(sizes), tuple(required)


_TARGETED = ("key", "array", "key_or_arr", "set", "local", "fill")  # (statement kinds whose first argument is set)


def _rotations(arch: str, entry: dict, kv: Mapping[str, Any], n_layer: int, hp: Hparams | None = None,
               part: str | None = None) -> tuple[tuple[Rotation | None, ...] | None, str, tuple[tuple[int, str], ...]]:
    """Per layer the arguments of its rope call (gguf_context.Rotation; None where the graph makes none),
    from the table's rope_forms (of `part`, where named) over the file's fields; (None, why) where a layer's
    cannot be known or its calls differ (DeepSeek-V3.2's indexer beside its attention, no part named: parts
    that turn the same pairs by the same angles, GLM-DSA's, read as the attention); and (layer, how) where its
    parts' calls differ, no part named (that layer's rotation None). `hp`: the plan's, its program run."""
    try:
        if hp is None:  # (the plan's program stopped at what it cannot run: what it would set is unknown)
            hp = _start(kv, _layer_count(kv), None, entry)  # (the plan checked the types)
            for cond, kind, *args in entry.get("hparams", ()):
                try:
                    if hp.evaluate(cond):
                        run(hp, kind, args, kv)
                except (ValueError, Unknown) as exc:  # (what it would set is unknown, where read)
                    if kind in _TARGETED:
                        hp.fields.pop(args[0], None)
                        hp.unknown[args[0]] = str(exc)
        hp.fields.update(context_fields(hp.fields, arch in table()["hparams"]["own_mscale"]))
        hp.fields["n_rot"] = hp.evaluate("n_rot(0)")  # (the graph's n_rot: llama_hparams::n_rot()'s, layer 0's)
        f = hp.fields
        if entry.get("rot_is_head") and f["n_rot_full"] != f["n_embd_head_k_full"]:  # (load_hparams throws)
            raise ValueError(f"rope.dimension_count {f['n_rot_full']} is not the head width "
                             f"{f['n_embd_head_k_full']}: llama.cpp refuses it for {arch} ('invalid n_rot')")
        for width in entry.get("rot_asserted") or ():  # (GGML_ASSERT(n_embd_head == n_rot): llama.cpp aborts)
            if hp.evaluate(width) != hp.fields["n_rot"]:
                named = width[1:-1] if width[:1] == "(" else width  # (the table's expression, unwrapped)
                raise Refused(f"the rotated width {hp.fields['n_rot']} (llama.cpp's n_rot: layer 0's "
                              "rope.dimension_count, or rope.dimension_count_swa on a sliding layer, else its "
                              "attention.key_length, else embedding_length / head_count) is not the head width "
                              f"{hp.evaluate(width)} (llama.cpp's {named}): its {arch} graph asserts they are equal")
        _check_heads_asserted(arch, entry, hp, n_layer)
        _check_part_heads(arch, entry, hp)
        out: list[Rotation | None] = []
        split: list[tuple[int, str]] = []
        for i in range(n_layer):
            calls = _layer_calls(entry, hp, i, part)
            if len(calls) > 1 and len({c.part for c in calls}) == len(calls):  # (each part its own way)
                split.append((i, _parts_ways(arch, entry, i, calls)))
                out.append(None)
                continue
            if len(calls) > 1:
                return None, (f"llama.cpp's graph for {arch!r} rotates layer {i} in {len(calls)} ways (another "
                              "head's RoPE beside the attention's, or another mode): vkrope reads one"), ()
            call = calls.pop() if calls else None
            out.append(call if call is None else replace(call, q_scale=_q_scale(entry, hp, i)))
        _q_scale_asserts(entry, hp, n_layer)
        return tuple(out), "", tuple(split)
    except Unknown as exc:
        return None, f"llama.cpp's rope arguments for {arch!r}: {exc}", ()
    except KeyError as exc:  # (a field the program left unknown: HunyuanVL's alpha-scaled base)
        reason = hp.unknown.get(str(exc.args[0]), "not known") if hp is not None else "not known"
        return None, f"llama.cpp's {exc.args[0]} for {arch!r}: {reason}", ()


def _check_heads_asserted(arch: str, entry: dict, hp: Hparams, n_layer: int) -> None:
    """Refused where the graph asserts a layer's key and value head widths equal (the table's heads_asserted:
    GGML_ASSERT(n_embd_head == hparams.n_embd_head_k()), per layer where it names `il`) and they differ; one the
    table cannot evaluate (a condition of its own: DeepSeek-V2's OCR branch) is not checked."""
    for cond, left, right in entry.get("heads_asserted") or ():
        for i in range(n_layer) if "il" in cond + left + right else (0,):
            try:
                holds = not hp.evaluate(cond, il=i) or hp.evaluate(left, il=i) == hp.evaluate(right, il=i)
            except Unknown:
                continue
            if not holds:
                raise Refused(f"layer {i}'s key width {hp.evaluate('n_embd_head_k(il)', il=i)} and value width "
                              f"{hp.evaluate('n_embd_head_v(il)', il=i)} differ (attention.key_length and "
                              "value_length, their _swa forms on a sliding layer, else embedding_length / "
                              f"head_count): llama.cpp's {arch} graph asserts {left} == {right} and aborts")


def _layer_calls(entry: dict, hp: Hparams, i: int, part: str | None) -> set[Rotation]:
    """Layer `i`'s rope calls (of `part`, where named; one, where the parts turn alike: _one_way; one per part
    where they differ, no part named); Unknown where a guard cannot be decided and the calls differ."""
    calls: set[Rotation] = set()
    unsure = None
    for form in entry.get("rope_forms") or ():
        mine = part is None or form.get("part", "attention") == part
        try:
            if not hp.evaluate(form["guard"], il=i):
                continue
        except Unknown as exc:  # (a guard vkrope cannot decide: DeepSeek's is_mla(); fine if calls agree)
            if not mine:
                continue
            unsure = exc
        if mine:
            calls.add(rotation(form, lambda e: hp.evaluate(e, il=i), hp.evaluate("n_embd_head_k(il)", il=i)))
    calls = _one_way(calls, entry)  # (first: parts turning alike are one way, whether a guard is known or not)
    if unsure is not None and len(calls) > 1:
        raise unsure
    return calls


def _parts_ways(arch: str, entry: dict, i: int, calls: set[Rotation]) -> str:
    """Why layer `i`, whose parts rotate each its own way, needs part=: the ways, said."""
    words = {"norm": "adjacent pairs (2i, 2i + 1)", "neox": "rotate-half pairs (i, i + n / 2)"}
    ways = "; ".join(f"part={c.part!r}: {words.get(pairs_of(c, entry), pairs_of(c, entry))} on "
                     + (f"heads of their own, {c.dims} channels" if c.apart else
                        f"the first {c.dims} of {c.head}-channel heads")
                     for c in sorted(calls, key=lambda c: c.part))
    return (f"llama.cpp's graph for {arch!r} rotates layer {i} in {len(calls)} ways, one per part ({ways}): pass "
            "part= to say which the RoPE is for")


def _check_part_heads(arch: str, entry: dict, hp: Hparams) -> None:
    """Refused where a part with heads of its own (the table's `head`: DeepSeek-V3.2's indexer) has fewer channels
    than it rotates: its graph asserts n_rot <= their width before any layer, whichever part is read and
    whether or not a layer runs that part."""
    for form in entry.get("rope_forms") or ():
        if "head" in form and hp.evaluate(form["head"], il=0) < hp.evaluate(form["dims"], il=0):
            key = next((f"{arch}.{st[3]}" for st in entry.get("hparams") or () if st[1:3] == ["key", form["head"]]),
                       f"llama.cpp's {form['head']}")
            raise Refused(f"the {form['part']}'s heads are {hp.evaluate(form['head'], il=0)} channels wide ({key}), "
                          f"fewer than the {hp.evaluate(form['dims'], il=0)} it rotates (n_rot): its {arch} graph "
                          "asserts n_rot <= their width")


def _one_way(calls: set[Rotation], entry: dict) -> set[Rotation]:
    """A layer's calls, the attention's alone where every part's turns the same pairs by the same angles (GLM-DSA's
    indexer: its own heads, the attention's pairs and frequencies)."""
    if len(calls) < 2 or len({c.part for c in calls}) != len(calls):
        return calls
    ways = {(pairs_of(c, entry), replace(c, head=0, mode="", apart=False, part="")) for c in calls}
    attention = {c for c in calls if c.part == "attention"}
    return attention if len(ways) == 1 and attention else calls


# llm_graph_input_attn_temp::set_input's factor, as ModelRope.q_scale computes it (the table's script checks that
# llama.cpp's code is this formula; a table of another says so, and vkrope refuses what it would scale).
Q_SCALE_FORMULA = ("attn_scale_data[i] = std::log( std::floor((pos + f_attn_temp_offset) / n_attn_temp_floor_scale) "
                   "+ 1.0 ) * f_attn_temp_scale + 1.0;")


def _q_scale(entry: dict, hp: Hparams, il: int) -> tuple[float, int] | None:
    """The (scale, positions per step) of the attention temperature by which layer `il`'s graph multiplies Q
    after RoPE (Mistral 3, DeepSeek-V2, Mistral 4), None where it does not; a ValueError where llama.cpp
    refuses or aborts on it, or the factor is not one vkrope computes; Unknown where the table cannot say."""
    guard = entry.get("q_scale", "False")
    if guard == "unknown":
        raise Unknown("whether its graph scales Q by the attention temperature")
    if not hp.evaluate(guard, il=il):
        return None
    rule = table()["hparams"]["q_scale"]
    if rule["formula"] != Q_SCALE_FORMULA:
        raise Refused("llama.cpp's attention temperature in this table is not the formula vkrope computes "
                      f"({rule['formula']!r}); regenerate vkrope's table or read the config with from_hf")
    _check_asserts(rule, hp)
    scale, length, offset = (hp.fields[n] for n in rule["fields"])
    if offset != 0 or scale < 0:  # (Llama 4's NoPE layers take an offset; a negative temperature: no model's)
        raise Refused(f"attention temperature: vkrope reads a scale > 0 with no offset; got scale {scale}, "
                      f"offset {offset}")
    return float(np.float32(scale)), int(length)


def _check_asserts(rule: dict, hp: Hparams, why: str = "") -> None:
    """Refused where the attention temperature's input fails llama.cpp's GGML_ASSERTs in its set_input (`why`:
    what the message says besides; by default what the scale needs)."""
    why = why or ("the scale needs its positions per step, attention.temperature_length or the original context "
                  "length, as the architecture reads it")
    for expr in rule["asserts"]:  # (GGML_ASSERT in set_input: llama.cpp aborts at the first batch)
        if not hp.evaluate(expr):
            raise Refused(f"the attention temperature fails llama.cpp's assert {expr} (it aborts at the first "
                          f"batch; {why})")


def _q_scale_asserts(entry: dict, hp: Hparams, n_layer: int) -> None:
    """Refused where some layer, rotating or not, multiplies Q by the attention temperature and its input fails
    llama.cpp's asserts: the file aborts at the first batch whichever layer is asked for (a Llama 4 file whose
    sliding window is 0 leaves the temperature 0, and its last layer, without RoPE, scales Q by it)."""
    guard = entry.get("q_scale", "False")
    scaled = [] if guard in ("False", "unknown") else [i for i in range(n_layer) if hp.evaluate(guard, il=i)]
    if scaled:
        _check_asserts(table()["hparams"]["q_scale"], hp, f"its graph scales Q by it on layer {scaled[0]}, which "
                                                         "this file's keys leave it unset for")


def sections_of(kv: Mapping[str, Any], entry: dict) -> list[int]:
    """rope.dimension_sections as llama.cpp's get_key_or_arr reads it into 4 entries: an array of exactly 4
    integers, or one integer for all 4 ([0] * 4 without the key, or where the architecture's loader reads
    none); a ValueError naming the key otherwise."""
    if "rope.dimension_sections" not in (entry.get("key_types") or {}):
        return [0] * 4  # (not read: not decoded either, whatever it holds)
    given = kv.get("rope.dimension_sections")
    if given is None:
        return [0] * 4
    values = list(given) if isinstance(given, (list, tuple)) else [given] * 4
    if len(values) != 4 or any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in values):
        raise ValueError(f"rope.dimension_sections must be 4 non-negative integers, or one for all 4 (llama.cpp's "
                         f"get_key_or_arr); got {repr(given)[:80]}")
    return values


def _use_mrope(kv: Mapping[str, Any], entry: dict) -> bool:
    """llama_hparams::use_mrope() on the file's rope.dimension_sections."""
    hp = Hparams({"rope_sections": sections_of(kv, entry)}, table()["hparams"]["methods"])
    try:
        return bool(hp.evaluate("use_mrope()"))
    except Unknown:
        return False


def _layer_count(kv: Mapping[str, Any]) -> int:
    """block_count, checked as llama.cpp's loader does."""
    limit = table()["hparams"]["max_layers"]
    n_layer_all = kv.get("block_count")
    if n_layer_all is None:
        raise ValueError("block_count is missing (llama.cpp requires it)")
    if isinstance(n_layer_all, bool) or not isinstance(n_layer_all, int) or not 1 <= n_layer_all <= limit:
        raise ValueError(f"block_count must be an integer in [1, {limit}] (llama.cpp's LLAMA_MAX_LAYERS); got "
                         f"{n_layer_all!r}")
    return n_layer_all


def check_types(types: dict[str, str] | None, entry: dict, complete: bool = True) -> None:
    """The keys every load of the architecture reads (llama_model_base::load_hparams' and its
    load_arch_hparams' reads outside any condition), each of a GGUF type llama.cpp's loader takes for it:
    it refuses the file otherwise ("key ... has wrong type"); and, in a `complete` file (not a converted
    config, which holds only the keys vkrope's converter table writes), each key such a read requires."""
    for reads in (table()["hparams"]["key_types"], entry.get("key_types") or {}):
        for key, read in reads.items():
            if complete and types is not None and read.get("required") == "True" and key not in types:
                raise ValueError(f"{key} is missing: llama.cpp's loader requires it and refuses the file without it "
                                 "('key not found in model')")
            if read["always"] and read["accept"] != "unknown":
                check_type(key, types, reads)


def check_reads(hp: Hparams, kv: Mapping[str, Any], entry: dict, complete: bool = True) -> None:
    """After the program ran: each read under a condition that holds for this file (DeepSeek-V2's
    q_lora_rank where it is no lite model; one vkrope cannot decide is left unchecked), of a GGUF type
    llama.cpp takes, each get_key_or_arr array of the entries it takes ("wrong array length"), and, in a
    `complete` file, present where the read requires it."""
    for reads in (table()["hparams"]["key_types"], entry.get("key_types") or {}):
        for key, read in reads.items():
            if key not in kv:
                if complete:
                    _check_present(hp, key, read)
                continue
            try:
                if not read["always"] and (read["cond"] is None or not hp.evaluate(read["cond"])):
                    continue
                n = hp.evaluate(read["count"]) if "count" in read else None
            except Unknown:
                continue
            if not read["always"]:  # (check_types took the others before the program)
                check_type(key, hp.types, reads)
            if n is not None and isinstance(kv[key], (list, tuple)) and len(kv[key]) != n:
                raise ValueError(f"{key} holds {len(kv[key])} entries; llama.cpp's get_key_or_arr takes exactly {n} "
                                 "and refuses the file otherwise ('wrong array length')")


def _check_present(hp: Hparams, key: str, read: dict) -> None:
    """ValueError where a file lacks `key` and llama.cpp's loader reads it as required under a condition that
    holds for the file (one vkrope cannot decide is left unchecked)."""
    try:
        if hp.types is None or read.get("required") in (None, "False") or not hp.evaluate(read["required"]):
            return
    except Unknown:
        return
    raise ValueError(f"{key} is missing: llama.cpp's loader requires it for this file and refuses the file "
                     "without it ('key not found in model')")


def _program(hp: Hparams, entry: dict, kv: Mapping[str, Any]) -> Iterator[tuple[str, list]]:
    """Run the table's load_arch_hparams statements of `entry` whose condition holds (an unknown name in one:
    Unknown), yielding each (kind, arguments) before it runs."""
    for cond, kind, *args in entry.get("hparams", ()):
        if hp.evaluate(cond):
            yield kind, args
            run(hp, kind, args, kv)


def keys_read(arch: str, kv: Mapping[str, Any]) -> list[str]:
    """The file's keys llama.cpp's loader reads for `arch`: those of the statements whose condition holds on
    this file (not a branch it does not take; load_swa_pattern's array or period where it reads the file's),
    attention.head_count_kv (else attention.head_count, n_head_kv's default) where a statement that runs or
    the rotation condition reads n_head_kv (the hybrids' recurrent layers: those without kv heads), and
    attention.head_count where they read n_head. For a file whose plan ran (the program is run again, as plan
    ran it, stopping where it stopped)."""
    entry = table()["archs"][arch]
    hp = _start(kv, _layer_count(kv), None, entry)
    keys, ran = [], [entry["rotates"]]
    try:
        for kind, args in _program(hp, entry, kv):
            ran.append(f"{kind} {args}")
            if kind in ("key", "key_or_arr", "array") and args[1] in kv:
                keys.append(args[1])
            if kind == "pattern" and args[2] and "attention.sliding_window_pattern" in kv:
                keys.append("attention.sliding_window_pattern")  # (load_swa_pattern's)
    except Unknown:
        pass  # (plan stopped there too: the keys read before it are what can be named)
    said = " ".join(ran)
    kv_heads = "attention.head_count_kv" if "attention.head_count_kv" in kv else "attention.head_count"
    for field, key in (("n_head_kv", kv_heads), ("n_head(", "attention.head_count")):  # (n_head_kv defaults
        if field in said and key in kv:  # to n_head; load_hparams reads both: no statement of the table does)
            keys.append(key)
    return list(dict.fromkeys(keys))


def _start(kv: Mapping[str, Any], n_layer_all: int, types: dict[str, str] | None, entry: dict) -> Hparams:
    """llama_hparams after llama_model_base::load_hparams read what the plans use."""
    t = table()["hparams"]
    hp = Hparams({"n_layer_all": n_layer_all}, t["methods"], types, entry.get("key_types"))
    for name, value in t["fields"].items():
        try:
            hp.fields[name] = [hp.evaluate(value["fill"])] * n_layer_all if isinstance(value, dict) \
                else hp.evaluate(value)
        except Unknown:
            pass  # (a default that is an expression of what is not read: unknown when used)
    f = hp.fields
    nextn = kv.get("nextn_predict_layers", 0)
    if isinstance(nextn, bool) or not isinstance(nextn, int) or not 0 <= nextn <= n_layer_all:  # (its assert)
        raise ValueError(f"nextn_predict_layers must be an integer in [0, block_count {n_layer_all}]; got {nextn!r}")
    f["n_layer_nextn"] = nextn
    f["n_layer"] = n_layer_all - f["n_layer_nextn"]
    for name, key in (("n_head_arr", "attention.head_count"), ("n_head_kv_arr", "attention.head_count_kv")):
        v = kv.get(key, kv.get("attention.head_count"))
        if v is not None:  # (get_key_or_arr: one count for every layer, or exactly one per layer)
            v = list(v) if isinstance(v, (list, tuple)) else [v] * n_layer_all
            # (a bool is an int: get_arr reads a bool array's entries as 0 / 1)
            if len(v) != n_layer_all or any(not isinstance(h, int) or h < 0 for h in v):
                raise ValueError(f"{key} must be a count, or {n_layer_all} counts (block_count); got {repr(v)[:80]}")
            f[name] = v
    f["rope_sections"] = sections_of(kv, entry)
    f["arch"] = entry.get("enum")  # (the base program's conditions name it; a test's own entry has none)
    for cond, kind, *args in t["base"]:  # (llama_model_base::load_hparams' RoPE fields, each read type-checked)
        if hp.evaluate(cond):
            run(hp, kind, args, kv, t["key_types"])
    return hp
