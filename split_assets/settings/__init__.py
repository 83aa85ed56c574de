"""The settings: the config file's sections (``sections.py``, the judge's in
``judge_sections.py``) and their loading (``loading.py``). The core takes the sections it needs;
only the application layer holds a whole ``LoadedConfig``."""

from split_assets.settings.judge_sections import (
    START_CONCURRENCY,
    OpenAIJudgeConfig,
    PriceConfig,
    RulesJudgeConfig,
)
from split_assets.settings.loading import (
    CONFIG_ENV_VAR,
    DEFAULT_CONFIG_PATH,
    LoadedConfig,
    ResolvedPaths,
    config_path_from_env,
    load_config,
    parse_config,
    shipped_prompts_dir,
)
from split_assets.settings.sections import (
    QUIET_KEYS,
    DiagConfig,
    EvaluationConfig,
    PathsConfig,
    SplitConfig,
    VideoSplitConfig,
    check_difficulty_levels,
    validation_size,
)

__all__ = [
    "CONFIG_ENV_VAR", "DEFAULT_CONFIG_PATH", "QUIET_KEYS", "START_CONCURRENCY", "DiagConfig",
    "EvaluationConfig", "LoadedConfig", "OpenAIJudgeConfig", "PathsConfig", "PriceConfig",
    "ResolvedPaths", "RulesJudgeConfig", "SplitConfig", "VideoSplitConfig",
    "check_difficulty_levels", "config_path_from_env", "load_config", "parse_config",
    "shipped_prompts_dir", "validation_size",
]
