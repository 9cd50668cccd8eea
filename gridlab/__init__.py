"""gridlab: declarative experiment grids for attention-interpretability studies.

A grid file (YAML) names datasets x encoders x attention/projection functions x training modes x seeds x
analyses; gridlab validates it, expands it into cells with content-derived ids, and (in later stages)
trains and analyses every cell on Ray.
"""

__version__ = "0.1.0"
