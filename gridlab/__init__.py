"""gridlab: declarative experiment grids for attention-interpretability studies.

A grid file (YAML) names datasets x encoders x attention/projection functions x training modes x seeds x
analyses; gridlab validates it, expands it into cells with content-derived ids, trains and analyses every
cell on Ray, and reports the rows beside the papers' numbers. docs/architecture.md maps the packages.

    >>> results = gridlab.open("grids/quick.yaml")   # a grid's results for a notebook (gridlab.api)
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gridlab.api import GridResults

# PyTorch's CPU allocator backs allocations of 2 MB and more with transparent huge pages when this is set
# before its first such allocation (it reads it once). An analysis batch allocates buffers of tens of MB
# whose first touch otherwise costs a page fault per 4 kB: a fifth of a BiLSTM pass at T = 180, measured
# with bench/analyses.py. A value already set wins (0 turns it off).
os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")

__version__ = "0.1.0"


def open(grid_or_results: str | os.PathLike[str], tracking_uri: str | None = None) -> GridResults:
    """A grid's results from its grid file, its results folder or that folder in object storage (`gridlab.api`:
    cells, rows, summary, runs, arrow). Imported on first call, so `import gridlab` loads no pandas or pyarrow."""
    from gridlab.api import open_results

    return open_results(grid_or_results, tracking_uri)
