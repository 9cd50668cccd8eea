"""A grid's report from its Parquet rows: its inputs, statistics across seeds, plots, the sections gridlab shows
for any grid and the rendering into Markdown + CSV tables, PNG figures and one `index.html`. The papers'
sections, published numbers, claims and fidelity table are the reproduction study's (`gridlab.studies`),
which plugs them in; nothing here imports it."""
