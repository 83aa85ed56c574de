"""Config errors are one clear line: what, where, how to fix."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from split_assets.errors import ConfigError
from split_assets.settings import load_config
from split_assets.workspace.inputs import check_floor_keys

VALID = {
    "video_split": {"baseline_run_id": "r1", "n_trainval": 10, "epsilon": 0.05,
                    "report_floor": 3, "val_wrong_min": 0, "val_ratio": 0.3, "seed": 1,
                    "floor_k": {}},
    "diag": {"prompt_version": "v1", "model": "rules-v1", "judge": "rules", "context": "full"},
}


def write(tmp_path: Path, doc: dict) -> Path:
    path = tmp_path / "cfg" / "video_split.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def broken(**changes: dict) -> dict:
    doc = {k: dict(v) for k, v in VALID.items()}
    for section, values in changes.items():
        for key, value in values.items():
            if value is None:
                doc[section].pop(key, None)
            else:
                doc[section][key] = value
    return doc


def test_valid_config_resolves_paths_against_its_folder(tmp_path: Path) -> None:
    loaded = load_config(write(tmp_path, VALID))
    assert loaded.paths.harness_db == (tmp_path / "cfg" / "harness.db").resolve()
    assert loaded.config.video_split.missing_predictions == "error"
    assert loaded.paths.prompts_dir.joinpath("defect_vs_lapse.md").is_file()


def test_missing_required_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, broken(video_split={"seed": None})))
    assert "missing required key 'video_split.seed'" in err.value.line()
    assert "video_split.yaml" in err.value.line()


def test_wrong_type(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, broken(video_split={"n_trainval": "many"})))
    assert "'video_split.n_trainval'" in err.value.line()
    assert "'many'" in err.value.line()


def test_unknown_key_suggests_closest(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, broken(video_split={"n_trainvall": 3})))
    assert "unknown key 'video_split.n_trainvall'" in err.value.line()
    assert "did you mean 'video_split.n_trainval'?" in err.value.line()


def test_unknown_section_suggests_closest(tmp_path: Path) -> None:
    doc = dict(VALID, path={"harness_db": "x.db"})
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, doc))
    assert "did you mean 'paths'?" in err.value.line()


def test_bad_choice(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, broken(diag={"judge": "gpt"})))
    assert "'diag.judge'" in err.value.line()


def test_missing_file_names_how_to_fix(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path / "nope.yaml")
    assert "config file not found" in err.value.line()
    assert "--config" in err.value.line()


def test_missing_file_names_the_source_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    """The error names where the path came from: the environment only when it was set."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SPLIT_ASSETS_CONFIG", raising=False)
    with pytest.raises(ConfigError) as err:
        load_config()
    assert err.value.where == "the default path: no --config, SPLIT_ASSETS_CONFIG unset"
    monkeypatch.setenv("SPLIT_ASSETS_CONFIG", str(tmp_path / "gone.yaml"))
    with pytest.raises(ConfigError) as err:
        load_config()
    assert err.value.where == "SPLIT_ASSETS_CONFIG"
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path / "nope.yaml")
    assert err.value.where == "--config" and "SPLIT_ASSETS_CONFIG" not in err.value.line()


def test_invalid_yaml_points_at_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("video_split:\n  seed: [1\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert "not valid YAML" in err.value.line()


def test_floor_k_typo_suggests_task_types() -> None:
    types = ["Counting Problem", "OCR Problems", "Temporal Reasoning"]
    with pytest.raises(ConfigError) as err:
        check_floor_keys({"Countng Problem": 3}, types)
    assert "'Countng Problem'" in err.value.line()
    assert "did you mean 'Counting Problem'" in err.value.line()
    assert err.value.exit_code == 2


def test_balance_of_an_own_field_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, broken(video_split={"balance": ["task_type"]})))
    assert "'video_split.balance'" in err.value.line()
    assert "extra question fields only" in err.value.line()


def test_bad_selector_lists_the_choices(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, broken(video_split={"selector": "fast"})))
    assert "'video_split.selector'" in err.value.line() and "swap_search" in err.value.line()


def test_later_keys_at_their_defaults_keep_the_split_id(tmp_path: Path) -> None:
    """A config written before selector/balance/epsilon_accuracy existed keeps its split_id;
    spelling out a default changes nothing; a non-default value makes a new split."""
    from split_assets.split.freeze import split_id

    def sid(**keys: object) -> str:
        vs = load_config(write(tmp_path, broken(video_split=keys))).config.video_split
        return split_id(vs.baseline_run_id, vs.identity())

    before = split_id("r1", dict(VALID["video_split"], difficulty_field="duration",
                                 missing_predictions="error",
                                 infra_stop_reasons=["error", "parse_error"]))
    assert sid() == sid(selector="auto", balance=[], epsilon_accuracy=None) == before
    assert len({sid(), sid(selector="class_lp"), sid(balance=["domain"]),
                sid(epsilon_accuracy=0.02)}) == 4


@pytest.mark.parametrize(("section", "key", "value"), [
    ("video_split", "n_trainval", "600"),   # a string is not an integer
    ("video_split", "n_trainval", True),    # nor is a bool
    ("video_split", "seed", 7.0),           # nor is a float
    ("video_split", "epsilon", "0.05"),     # a string is not a float either
    ("diag", "concurrency", "8"),
])
def test_types_are_strict(tmp_path: Path, section: str, key: str, value: object) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, broken(**{section: {key: value}})))
    assert f"'{section}.{key}'" in err.value.line() and repr(value) in err.value.line()
    assert err.value.exit_code == 2


def test_a_float_key_still_takes_an_integer(tmp_path: Path) -> None:
    vs = load_config(write(tmp_path, broken(video_split={"epsilon": 1, "val_ratio": 0})))
    assert vs.config.video_split.epsilon == 1.0 and vs.config.video_split.val_ratio == 0.0
    with pytest.raises(ConfigError, match="'video_split.epsilon'"):
        load_config(write(tmp_path, broken(video_split={"epsilon": True})))


def test_a_duplicate_key_names_the_key_and_both_lines(tmp_path: Path, run_cli) -> None:  # noqa: ANN001
    path = tmp_path / "video_split.yaml"
    text = yaml.safe_dump(VALID, sort_keys=False)
    path.write_text(text.replace("  seed: 1\n", "  seed: 1\n  seed: 2\n"), encoding="utf-8")
    first = text.splitlines().index("  seed: 1") + 1
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert f"duplicate key 'video_split.seed' (line {first + 1}; first on line {first})" in \
        err.value.line()
    assert f"{path}:{first + 1}" in err.value.line()
    # a duplicate deeper down, through the CLI: one line, exit 2
    path.write_text(text.replace("  floor_k: {}\n", "  floor_k:\n    a: 1\n    a: 2\n"),
                    encoding="utf-8")
    code, _, out = run_cli("fingerprint", "--config", str(path))
    assert code == 2 and out.count("error: ") == 1 and "Traceback" not in out
    assert "duplicate key 'video_split.floor_k.a'" in out


def test_a_config_that_is_not_utf8_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "video_split.yaml"
    path.write_bytes(yaml.safe_dump(VALID).encode("utf-8") + b"# caf\xe9\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert "not UTF-8" in err.value.line() and str(path) in err.value.line()


@pytest.mark.parametrize(("n_trainval", "val_ratio"), [(10, 1), (10, 0.96), (1, 0.5)])
def test_val_ratio_must_leave_a_training_video(tmp_path: Path, n_trainval: int,
                                               val_ratio: float) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, broken(video_split={"n_trainval": n_trainval,
                                                        "val_ratio": val_ratio})))
    assert "'video_split'" in err.value.line() and "leaves no training videos" in \
        err.value.line()
    # floor(0.94 * 10 + 0.5) = 9 of 10: one training video is enough
    load_config(write(tmp_path, broken(video_split={"n_trainval": 10, "val_ratio": 0.94})))


def test_the_signal_store_is_never_the_harness_db(tmp_path: Path) -> None:
    def refused(paths: dict[str, str]) -> str:
        with pytest.raises(ConfigError) as err:
            load_config(write(tmp_path, dict(VALID, paths=paths)))
        return err.value.line()

    line = refused({"harness_db": "harness.db", "signals_db": "./sub/../harness.db"})
    assert "paths.signals_db and paths.harness_db are the same file" in line
    assert "never written" in line
    cfg = tmp_path / "cfg"
    cfg.mkdir(exist_ok=True)
    (cfg / "agent.db").write_bytes(b"")
    (cfg / "link.db").symlink_to(cfg / "agent.db")
    assert "same file" in refused({"harness_db": "agent.db", "signals_db": "link.db"})
    (cfg / "hard.db").hardlink_to(cfg / "agent.db")
    assert "same file" in refused({"harness_db": "agent.db", "signals_db": "hard.db"})
    load_config(write(tmp_path, dict(VALID, paths={"harness_db": "agent.db",
                                                    "signals_db": "signals.db"})))


def test_every_key_of_the_one_table_is_a_key_of_the_config() -> None:
    """``config_keys.KEYS`` (what the core's messages name) against the config's models: a key
    renamed in the models but not in the table fails here."""
    from pydantic import BaseModel

    from split_assets.config_keys import KEYS
    from split_assets.settings import SplitConfig

    def exists(model: type[BaseModel], path: list[str]) -> bool:
        field = model.model_fields.get(path[0])
        if field is None:
            return False
        if len(path) == 1:
            return True
        inner = field.annotation
        return isinstance(inner, type) and issubclass(inner, BaseModel) and exists(inner, path[1:])

    missing = sorted(key for key in KEYS.values() if not exists(SplitConfig, key.split(".")))
    assert missing == []
    assert len(set(KEYS.values())) == len(KEYS)
