"""Path parameters shared by the routers."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path

Id = Annotated[int, Path(ge=1, le=2**62, description="a numeric id")]
