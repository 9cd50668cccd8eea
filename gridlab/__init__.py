"""gridlab: declarative experiment grids for attention-interpretability studies.

A grid file (YAML) names datasets x encoders x attention/projection functions x training modes x seeds x
analyses; gridlab validates it, expands it into cells with content-derived ids, trains and analyses every
cell on Ray, and reports the rows beside the papers' numbers. docs/architecture.md maps the packages.
"""

import os

# PyTorch's CPU allocator backs allocations of 2 MB and more with transparent huge pages when this is set
# before its first such allocation (it reads it once). An analysis batch allocates buffers of tens of MB
# whose first touch otherwise costs a page fault per 4 kB: a fifth of a BiLSTM pass at T = 180, measured
# with bench/analyses.py. A value already set wins (0 turns it off).
os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")

__version__ = "0.1.0"
