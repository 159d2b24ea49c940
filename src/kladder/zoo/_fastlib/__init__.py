"""_fastlib: a stand-in for an upstream kernel DSL (FlyDSL) that downstream kernels are written
against, for the silent_fallback case. Its 0.3 release moved `buffer_ops` out of `expr` into a
module of its own (as FlyDSL v0.3.0 moved buffer_ops out of flydsl.expr, FlyDSL #880); `expr`
keeps the rest of its helpers."""
__version__ = "0.3.0"
