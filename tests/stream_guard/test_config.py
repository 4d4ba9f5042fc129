import pytest

from stream_guard.config import DetectorConfig, load_config, preset


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
    from stream_guard.score_model import DEFAULT_MODEL

    assert DetectorConfig().flag_threshold == DEFAULT_MODEL.threshold


def test_a_relative_score_model_path_is_read_from_the_config_files_folder(tmp_path, monkeypatch):
    from dataclasses import replace

    from stream_guard.detector import HallucinationDetector
    from stream_guard.score_model import DEFAULT_MODEL, save_model

    folder = tmp_path / "configs"
    folder.mkdir()
    model = replace(DEFAULT_MODEL, intercept=DEFAULT_MODEL.intercept + 3.0, threshold=0.55)
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
    (tmp_path / "broken.json").write_text('{"features": []}')
    path.write_text('[detector]\nscore_model_path = "broken.json"\n')
    with pytest.raises(ValueError, match="score_model_path: .*not a score model.*weights"):
        load_config(path)
