"""The runtime every operator runs on, knowing none of them: the kernel
registry (kernels.py), submissions described as data (steps.py), their
recording with derived barriers (recorder.py), tensor layouts (layout.py),
block splitting (blocks.py), the per-device `Runtime` that owns pipelines,
recordings, work buffers and the array pool (engine.py), and the paths
from numpy or device arrays to a submission (execute.py)."""
