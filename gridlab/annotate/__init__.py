"""Human evaluation of attention, as in Vashishth et al. (2019) §4.4: are the words with the highest
attention weights relevant for the model's prediction, with the original weights and with permuted ones?

    gridlab annotate export grids/vashishth.yaml --per-cell 100     # items.csv, INSTRUCTIONS.md, key.parquet
    # each annotator copies items.csv to answers-<name>.csv and fills `answer` with yes / no
    gridlab annotate score grids/vashishth.yaml                    # Cohen's kappa and the 2x2 tables

- `export.py`: a blinded, shuffled sheet of items (two per sampled test instance: original and permuted
  attention) and the hidden key that says which is which.
- `score.py`: validates the answer sheets against the key, then agreement and the paper's tables.
"""
