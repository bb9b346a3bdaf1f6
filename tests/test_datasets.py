"""Adult loader: real rows from DPAUDIT_DATA, checksum refusal, clear error when offline."""

import gzip
import shutil
import urllib.request

import pytest

from dpaudit import DatasetError, audit, datasets


def test_adult_rows_labels_and_schema(adult_available):
    frame, schema = datasets.load("adult")
    assert len(frame) == 48_842
    assert frame["income"].value_counts().to_dict() == {"<=50K": 37_155, ">50K": 11_687}
    assert frame["sex"].value_counts().to_dict() == {"Male": 32_650, "Female": 16_192}
    assert not schema.data_derived
    # every column fits its declared domain: counting all of them raises nothing
    res = audit(frame, ["sex ⊥ income | age, fnlwgt", "race, native-country ⊥ income | capital-gain, capital-loss",
                        "workclass, occupation ⊥ education, marital-status | relationship, hours-per-week",
                        "education-num ⊥ income"], schema=schema, exact=True, measures=("tvd",))
    assert res.n == 48_842


def test_info_and_unknown_name():
    info = datasets.info("adult")
    assert info.rows == 48_842 and "CC BY 4.0" in info.license
    assert [f.name for f in info.files] == ["adult.data", "adult.test"]
    with pytest.raises(DatasetError, match="unknown dataset 'nope'; registered: adult"):
        datasets.load("nope")


def _copy_adult(src_root, dst_root):
    (dst_root / "adult").mkdir(parents=True)
    for name in ("adult.data.gz", "adult.test.gz"):
        shutil.copy(src_root / "adult" / name, dst_root / "adult" / name)


def test_checksum_mismatch_refuses(adult_available, tmp_path, monkeypatch):
    _copy_adult(adult_available, tmp_path)
    target = tmp_path / "adult" / "adult.data.gz"
    data = gzip.decompress(target.read_bytes())
    target.write_bytes(gzip.compress(data.replace(b"Female", b"Femal3", 1)))
    monkeypatch.setenv("DPAUDIT_DATA", str(tmp_path))
    monkeypatch.setenv("DPAUDIT_CACHE", str(tmp_path / "cache"))
    with pytest.raises(DatasetError, match="sha256 of adult/adult.data is .* expected 5b0026.*refusing to load"):
        datasets.load("adult")


def test_missing_file_offline_names_variable_and_path(tmp_path, monkeypatch):
    monkeypatch.setenv("DPAUDIT_DATA", str(tmp_path))
    monkeypatch.setenv("DPAUDIT_CACHE", str(tmp_path / "cache"))

    def offline(*args, **kwargs):
        raise urllib.error.URLError("network unreachable")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    with pytest.raises(DatasetError, match=r"DPAUDIT_DATA=.* has no adult/adult.data\[.gz\].*downloading https://archive"):
        datasets.load("adult")


def test_download_is_verified_and_cached(adult_available, tmp_path, monkeypatch, fake_response):
    """The download path (served from the local copy) verifies the checksum and fills the cache."""
    monkeypatch.delenv("DPAUDIT_DATA")
    monkeypatch.setenv("DPAUDIT_CACHE", str(tmp_path / "cache"))
    served = []

    Response = fake_response

    def fake_urlopen(url, timeout):
        name = url.rsplit("/", 1)[1]
        served.append(name)
        return Response((adult_available / "adult" / f"{name}.gz").read_bytes())

    monkeypatch.setattr(urllib.request, "urlopen", fake_urlopen)
    frame, _ = datasets.load("adult")
    assert len(frame) == 48_842 and served == ["adult.data", "adult.test"]
    assert (tmp_path / "cache" / "adult" / "adult.data").is_file()
    datasets.load("adult")  # second load comes from the cache
    assert served == ["adult.data", "adult.test"]
    # a corrupted cache file is refused, not silently used
    (tmp_path / "cache" / "adult" / "adult.test").write_bytes(b"garbage")
    with pytest.raises(DatasetError, match="refusing to load"):
        datasets.load("adult")

