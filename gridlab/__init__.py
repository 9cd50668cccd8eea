"""gridlab: declarative experiment grids for attention-interpretability studies.

A grid file (YAML) names datasets x encoders x attention/projection functions x training modes x seeds x
analyses; gridlab validates it, expands it into cells with content-derived ids, trains and analyses every
cell on Ray, and reports the rows beside the papers' numbers. docs/architecture.md maps the packages.
"""

__version__ = "0.1.0"
