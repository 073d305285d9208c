"""Writing the small GGUF files the from_gguf tests read (gguf.GGUFWriter)."""

from __future__ import annotations

from typing import Any

import numpy as np


def finish(w: Any, tensors: Any, path: Any) -> str:
    """Add the rope tensors (float32) to writer `w`, write the file and close it; its path."""
    for name, arr in tensors:
        w.add_tensor(name, np.asarray(arr, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return str(path)
