"""Images built from a trainer directory: :func:`build_image` (``tfjob build``,
``tfjob submit --build``), the recipe (:mod:`tfjob.images.recipe`, pure), the registry
check (:mod:`tfjob.images.registry`) and Cloud Build (:mod:`tfjob.images.cloudbuild`)."""

from __future__ import annotations

from ..errors import ImageBuildError
from .build import BuiltImage, Progress, build_image
from .registry import RegistryError

__all__ = ["BuiltImage", "ImageBuildError", "Progress", "RegistryError", "build_image"]
