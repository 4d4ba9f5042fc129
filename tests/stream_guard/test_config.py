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
