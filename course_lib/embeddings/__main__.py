"""python -m course_lib.embeddings: warm UMAP's numba cache (make setup and Binder's postBuild do it once, so that
no kernel compiles it again)."""
from .projection import warm_umap

print(f"UMAP ready ({warm_umap():.1f} s; numba's compiled code is cached for the next kernels)")
