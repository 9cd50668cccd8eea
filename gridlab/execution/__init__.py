"""Running a grid: training its cells as Ray Tune trials (`launch`, `trainable`, `progress`, `ray_session`)
and its analyses as shards on Ray actors (`plan`, `actors`, `runner`: which test instances of which model
each unit of work covers, one model load per actor and cell, one Parquet part per analysis and shard). The
only package that imports Ray."""
