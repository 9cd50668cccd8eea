"""Analysis shards: which test instances of which model each unit of work covers, and the Ray actors
that run them (one model load per actor and cell, one Parquet part per analysis and shard)."""
