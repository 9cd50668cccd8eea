"""`gridlab report`: the papers' tables and figures from a grid's Parquet rows, side by side with the
papers' published numbers, as Markdown + CSV tables, PNG figures and one `index.html`."""
