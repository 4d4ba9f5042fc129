import pytest

from stream_guard.config.detector import DetectorConfig, preset
from stream_guard.config.load import load_config


def test_defaults_match_the_seed_library():
    c = DetectorConfig()
    assert (c.confidence_threshold, c.faithfulness_threshold, c.faithfulness_overlap_threshold) == (0.75, 0.50, 0.40)
    assert (c.drift_threshold, c.window_size, c.db_path, c.log_flagged) == (0.35, 50, "hallucination_drift.db", True)


@pytest.mark.parametrize("name, conf, overlap, drift", [
    ("general", 0.75, 0.40, 0.35), ("strict", 0.60, 0.70, 0.25), ("noisy", 0.80, 0.35, 0.45)])
def test_presets_follow_the_domain_table(name, conf, overlap, drift):
    c = preset(name)
    assert (c.confidence_threshold, c.faithfulness_overlap_threshold, c.drift_threshold) == (conf, overlap, drift)


def test_unknown_preset_is_an_error():
    with pytest.raises(ValueError, match="unknown preset"):
        preset("lenient")


def test_toml_file_overrides_preset_and_limits(tmp_path):
    path = tmp_path / "guard.toml"
    path.write_text('[detector]\npreset = "strict"\ndrift_threshold = 0.3\n[detector.limits]\nmax_chunks = 7\n')
    c = load_config(path)
    assert c.confidence_threshold == 0.60 and c.drift_threshold == 0.3 and c.limits.max_chunks == 7


def test_toml_unknown_key_is_rejected(tmp_path):
    path = tmp_path / "guard.toml"
    path.write_text("[detector]\nconfidence_treshold = 0.5\n")
    with pytest.raises(ValueError, match="confidence_treshold"):
        load_config(path)


def test_a_file_with_only_a_stream_table_leaves_detector_defaults(tmp_path):
    path = tmp_path / "guard.toml"
    path.write_text("[stream]\nbatch_max = 8\n")
    assert load_config(path) == DetectorConfig()


def test_the_default_flag_threshold_is_the_one_chosen_for_the_shipped_model():
    from stream_guard.config.score_model import DEFAULT_MODEL

    assert DetectorConfig().flag_threshold == DEFAULT_MODEL.threshold


def test_a_relative_score_model_path_is_read_from_the_config_files_folder(tmp_path, monkeypatch):
    from msgspec.structs import replace

    from stream_guard.engine.detector import HallucinationDetector
    from stream_guard.config.score_model import DEFAULT_MODEL, save_model

    folder = tmp_path / "configs"
    folder.mkdir()
    model = replace(DEFAULT_MODEL, offsets={k: round(v + 3.0, 6) for k, v in DEFAULT_MODEL.offsets.items()},
                    threshold=0.55)  # as saved
    save_model(model, str(folder / "mine.score_model.json"))
    (folder / "guard.toml").write_text('[detector]\nflag_threshold = 0.55\nscore_model_path = "mine.score_model.json"\n')
    monkeypatch.chdir(tmp_path)  # loaded from elsewhere: the path still names the file beside the TOML
    c = load_config("configs/guard.toml")
    assert c.score_model_path == str((folder / "mine.score_model.json").resolve())
    assert HallucinationDetector(c.with_overrides(ner="regex", db_path=":memory:")).score_model == model


def test_a_missing_or_broken_score_model_is_refused_when_the_config_loads(tmp_path):
    path = tmp_path / "guard.toml"
    path.write_text('[detector]\nscore_model_path = "nowhere.json"\n')
    with pytest.raises(ValueError, match=r"score_model_path: .*nowhere.json: no such file"):
        load_config(path)
    (tmp_path / "broken.json").write_text('{"evidence": []}')
    path.write_text('[detector]\nscore_model_path = "broken.json"\n')
    with pytest.raises(ValueError, match="score_model_path: .*not a score model.*weights"):
        load_config(path)


# --- validation: checked when built, the key and the reason named ---------------------------------------------

from stream_guard.config.load import build_config, load  # noqa: E402
from stream_guard.config.schema import ConfigError  # noqa: E402


@pytest.mark.parametrize(("values", "key", "reason"), [
    ({"flag_threshold": "x"}, "flag_threshold", "expected a finite number, got 'x'"),
    ({"flag_threshold": 5}, "flag_threshold", "must be a number from 0 to 1, got 5"),
    ({"accept_threshold": -0.1}, "accept_threshold", "from 0 to 1"),
    ({"flag_threshold": True}, "flag_threshold", "expected a finite number"),
    ({"ner": "foo"}, "ner", "must be one of auto, spacy, regex, got 'foo'"),
    ({"limits": {"max_answer_chars": "x"}}, "limits.max_answer_chars", "expected an integer, got 'x'"),
    ({"limits": {"max_chunks": 0}}, "limits.max_chunks", "must be a positive integer, got 0"),
    ({"limits": {"max_chunkz": 3}}, "limits.max_chunkz", "unknown limits key"),
    ({"drift_min_history": 0}, "drift_min_history", "must be an integer of at least 1, got 0"),
    ({"window_size": -1}, "window_size", "must be an integer of at least 1, got -1"),
    ({"window_size": 2.5}, "window_size", "expected an integer"),
    ({"fallback_threshold": 0.8}, "fallback_threshold", "must be below accept_threshold (0.75), got 0.8"),
    ({"drift_min_history": 60}, "drift_min_history", "must not exceed window_size (50)"),
    ({"event_budget_ms": 0}, "event_budget_ms", "positive number of milliseconds"),
    ({"fallback_message": " "}, "fallback_message", "non-empty text"),
    ({"log_flagged": "maybe"}, "log_flagged", "expected a boolean"),
    ({"preset": "lenient"}, "preset", "unknown preset 'lenient'"),
])
def test_bad_values_fail_at_start_naming_the_key(values, key, reason):
    with pytest.raises(ConfigError) as caught:
        load({"detector": values})
    assert caught.value.key == key and reason in caught.value.reason
    assert str(caught.value).startswith(f"{key}: ")


def test_a_config_built_in_code_is_checked_too():
    with pytest.raises(ConfigError, match="window_size"):
        DetectorConfig(window_size=0)
    assert DetectorConfig(flag_threshold=1).flag_threshold == 1  # ints are numbers; bounds are inclusive


def test_every_detector_setting_and_limit_comes_from_the_environment():
    env = {"STREAM_GUARD_FLAG_THRESHOLD": "0.55", "STREAM_GUARD_NER": "regex", "STREAM_GUARD_WINDOW_SIZE": "20",
           "STREAM_GUARD_LOG_FLAGGED": "true", "STREAM_GUARD_EVENT_BUDGET_MS": "120",
           "STREAM_GUARD_LIMITS_MAX_ANSWER_CHARS": "8000", "STREAM_GUARD_FALLBACK_MESSAGE": "Ask a human.",
           "PATH": "/bin"}
    c = build_config(None, None, None, env=env)
    assert (c.flag_threshold, c.ner, c.window_size, c.event_budget_ms) == (0.55, "regex", 20, 120.0)
    assert c.limits.max_answer_chars == 8000 and c.fallback_message == "Ask a human."


def test_precedence_preset_then_file_then_environment_then_flags(tmp_path):
    path = tmp_path / "guard.toml"
    path.write_text("[detector]\ndrift_threshold = 0.3\nflag_threshold = 0.5\n")
    env = {"STREAM_GUARD_PRESET": "strict", "STREAM_GUARD_FLAG_THRESHOLD": "0.6", "STREAM_GUARD_NER": "spacy"}
    c = build_config(str(path), None, "regex", env=env)
    assert c.confidence_threshold == 0.60  # the environment's preset
    assert c.drift_threshold == 0.3  # the file over the preset
    assert c.flag_threshold == 0.6  # the environment over the file
    assert c.ner == "regex"  # the flag over the environment


def test_a_bad_environment_value_names_its_setting():
    with pytest.raises(ConfigError) as caught:
        build_config(None, None, None, env={"STREAM_GUARD_LIMITS_MAX_CHUNKS": "lots"})
    assert caught.value.key == "limits.max_chunks"
