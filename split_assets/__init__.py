"""split_assets: a Dagster code location that freezes an outcome-driven, reproducible
train/validation/test split of a video-QA benchmark (README.md). For an evolution loop in
Python: ``split_assets.api.feedback``."""
