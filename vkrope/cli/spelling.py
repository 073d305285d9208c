"""The Python API's messages in the command's words: a keyword as its flag (like='llama' -> --like llama), an
array argument as its file (x -> X.npy)."""

from __future__ import annotations

import re

# The Python keywords each command's flags pass on, as its messages spell them: a name read as a word
# ("storage", "positions") only where it names the argument (message start, name=value); one no prose
# uses (num_heads) anywhere.
_FLAG_WORDS = {"bench": ("storage",), "config": ("like", "context_length", "part"),
               "apply": ("positions", "storage", "repeat", "exclude_last", "inverse"),
               "rotary-embedding": ("position_ids", "storage", "interleaved", "rotary_embedding_dim", "num_heads")}


_FLAG_NAMES_ANYWHERE = ("position_ids", "rotary_embedding_dim", "num_heads", "repeat", "exclude_last")


# The positional files of each command, as the API's messages name their arrays.
_FILE_WORDS = {"apply": {"x": "X.npy", "freqs": "FREQS.npy"},
               "rotary-embedding": {"x": "X.npy", "cos_cache": "COS.npy", "sin_cache": "SIN.npy"}}


def _word(match: re.Match, file: str) -> str:
    """`file` for an argument's name matched in a message; the match itself where it stands between two
    numbers (the sign of a product)."""
    text, start, end = match.string, match.start(), match.end()
    product = re.search(r"\d $", text[:start]) is not None and re.match(r" \d", text[end:]) is not None
    return match.group(0) if product else file


def cli_spelling(message: str, command: str) -> str:
    """A message of the Python API in the flags of `command`: like='llama'
    -> --like llama, num_heads -> --num-heads, a leading storage -> --storage."""
    message = re.sub(r" \(vkrope config --like [^)]*\)", "", message)  # (said for Python callers)
    message = re.sub(r"convert with \w+\.astype\(np\.(\w+)\)", r"save it as \1", message)  # (Python code)
    if command == "config":  # (from_gguf's argument is `path`, from_hf's `config`; the command's, PATH)
        message = re.sub(r"^(path|config)(?=: | \()", "PATH", message)  # (config (Arch, read as ...): too)
    for name, file in _FILE_WORDS.get(command, {}).items():  # (a word: not in x.shape, x[0], a path, a quote,
        # nor the x of a product, "1 x 16777218 rows")
        parts = re.split(r"""('[^']*'|"[^"]*")""", message)
        message = "".join(part if i % 2 else re.sub(rf"(?<![\w.'\[/-]){name}(?![\w.\[(/])", lambda m: _word(m, file),
                                                    part) for i, part in enumerate(parts))
    for name in _FLAG_WORDS.get(command, ()):
        flag = "--" + name.replace("_", "-")
        message = re.sub(rf"(?<![\w.-]){name}='([^']*)'", rf"{flag} \1", message)  # like='llama' -> --like llama
        message = re.sub(rf"(?<![\w.-]){name}=(?=[\s,;)]|$)", flag, message)  # 'without like=' -> 'without --like'
        message = re.sub(rf"(?<![\w.-]){name}=(?=[^\s,;)])", f"{flag} ", message)  # repeat=2 -> --repeat 2
        where = r"(?<![\w.'-])" if name in _FLAG_NAMES_ANYWHERE else r"^"
        message = re.sub(rf"{where}{name}(?=[\s:,)]|$)", flag, message)
    return message
