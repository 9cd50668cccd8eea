"""Per-instance analysis rows: Arrow schemas, atomic Parquet parts, readers."""
