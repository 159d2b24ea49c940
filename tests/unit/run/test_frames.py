"""run/frames.py on exceptions raised here: which frames are the user's, kladder's or a
library's, how paths are shown, the cause chain spliced into the frame that caught it, the folds
and their counts, a launcher that was never entered, and a Triton compile error's line found
from its @jit function (a small stand-in with Triton's attributes; no kernel is compiled)."""
import functools
import json
import os
import sysconfig
import types

import pytest
import torch

import kladder
from kladder.run import frames
from kladder.run.modes.base import call_raw

KLADDER = os.path.dirname(os.path.abspath(kladder.__file__))
STDLIB = sysconfig.get_paths()["stdlib"]
HERE = os.path.abspath(__file__)
TORCH = os.path.dirname(os.path.abspath(torch.__file__))     # imported: frames.py reads sys.modules


def _caught(fn, *args):
    try:
        fn(*args)
    except BaseException as e:  # noqa: BLE001 - the exception is what is looked at
        return e
    raise AssertionError("it did not raise")


# ---------------------------------------------------------------------------- kinds and paths
def test_kind_of_tells_kladders_files_from_the_zoos_the_libraries_and_the_users():
    assert frames.kind_of(os.path.join(KLADDER, "run", "harness.py")) == "kladder"
    assert frames.kind_of(os.path.join(KLADDER, "zoo", "softmax.py")) == "user"       # the zoo's kernels are kernels
    assert frames.kind_of(json.__file__) == "library"
    assert frames.kind_of(os.path.join(TORCH, "nn", "functional.py")) == "library"
    assert frames.kind_of(os.path.join(STDLIB, "site-packages", "mylib", "k.py")) == "user"   # installed, not ours
    assert frames.kind_of(HERE) == "user"
    assert frames.kind_of("<frozen importlib._bootstrap>") == "library"
    assert frames.kind_of("<string>") == "user"


def test_shown_paths_are_relative_to_the_working_folder_or_the_librarys_package(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert frames.shown_path(str(tmp_path / "k" / "kern.py")) == os.path.join("k", "kern.py")
    torch_file = os.path.join(TORCH, "nn", "functional.py")
    assert frames.shown_path(torch_file) == os.path.join("torch", "nn", "functional.py")
    assert frames.shown_path(json.__file__) == os.path.join("json", "__init__.py")
    assert frames.shown_path("<string>") == "<string>"
    outside = os.path.abspath(os.path.join(os.sep, "nowhere-kl", "x.py"))
    assert frames.shown_path(outside) == outside


# ---------------------------------------------------------------------------- the chain
def _inner():
    raise ValueError("inner")


def _outer():
    try:
        _inner()
    except ValueError as e:
        raise RuntimeError("outer") from e


def test_the_chain_is_the_exception_then_its_explicit_causes_and_stops_at_a_cycle():
    e = _caught(_outer)
    assert [type(x).__name__ for x in frames._chain(e)] == ["RuntimeError", "ValueError"]
    a, b = ValueError("a"), ValueError("b")
    a.__cause__, b.__cause__ = b, a
    assert frames._chain(a) == [a, b]
    implicit = _caught(_implicit)
    assert len(frames._chain(implicit)) == 1                 # __context__ only: not followed


def _implicit():
    try:
        raise KeyError("k")
    except KeyError:
        raise TypeError("t")  # noqa: B904 - the implicit context is the point


def test_a_causes_frames_continue_inside_the_frame_that_caught_it():
    raw = frames._raw_frames(_caught(_outer))
    names = [f[3] for f in raw]
    assert names == ["_caught", "_outer", "_inner"]          # _outer once, at its try, then the cause's own
    assert raw[1][2] == _inner.__code__.co_firstlineno + 6   # the line of `_inner()` inside _outer's try


def test_no_traceback_no_trace():
    assert frames.trace_of(ValueError("never raised")) is None


# ---------------------------------------------------------------------------- folding
def test_the_users_frames_are_kept_and_a_librarys_raising_frame_shown_with_its_code():
    facts = frames.trace_of(_caught(json.loads, "{"))
    kept = facts["frames"]
    assert [f["kind"] for f in kept] == ["user", "library"]
    assert kept[0]["function"] == "_caught" and kept[0]["code"] == "fn(*args)"
    assert kept[-1]["file"].startswith("json" + os.sep) and facts["folded_library"] >= 1
    assert facts["folded_kladder"] == 0 and "folded_more" not in facts
    json.dumps(facts, allow_nan=False)


def test_a_library_frame_reached_through_kladders_is_kladders_doing_and_folded():
    facts = frames.trace_of(_caught(call_raw, json.loads, ["{"], {}))
    assert [f["kind"] for f in facts["frames"]] == ["user"]
    assert facts["folded_kladder"] == 1 and facts["folded_library"] >= 2


def _deep(n):
    if n == 0:
        raise RecursionError("deep")
    return _deep(n - 1)


def test_past_max_frames_the_outermost_are_folded_and_counted():
    facts = frames.trace_of(_caught(_deep, 20))
    assert len(facts["frames"]) == frames.MAX_FRAMES
    assert facts["folded_more"] == 22 - frames.MAX_FRAMES                # _caught + 21 calls of _deep
    assert facts["frames"][-1]["code"] == 'raise RecursionError("deep")'


def test_a_long_source_line_is_cut():
    frame = frames._frame(HERE, 1, "m", "user")
    assert frame["line"] == 1 and len(frame["code"]) <= frames.CODE_CHARS
    assert frames._frame(HERE, 0, "m", "user")["code"] == ""


# ---------------------------------------------------------------------------- the launcher
def launcher(x, y):
    return x + y


@functools.lru_cache
def cached_launcher(x):
    raise ValueError(x)


class Callable:
    def __call__(self, x):
        raise ValueError(x)


def test_a_call_that_never_entered_the_launcher_names_its_def_line_and_what_was_passed():
    e = _caught(launcher, 1, 2, 3)
    facts = frames.trace_of(e, launcher, ["x", "y"], ["BLOCK"])
    assert facts["entered"] is False and facts["called"] == ["x", "y", "BLOCK="]
    assert facts["launcher"]["function"] == "launcher" and facts["launcher"]["code"] == "def launcher(x, y):"


def test_a_launcher_that_raised_inside_is_entered_through_partials_wrappers_and_call_methods():
    e = _caught(launcher, 1, "a")
    assert frames.trace_of(e, functools.partial(launcher, 1), ["x"])["entered"] is True
    assert frames.trace_of(_caught(cached_launcher, 3), cached_launcher)["entered"] is True
    c = Callable()
    assert frames.trace_of(_caught(c, 2), c)["entered"] is True
    assert "launcher" not in frames.trace_of(e, launcher)


def test_kladders_own_launcher_or_a_builtin_adds_nothing():
    e = _caught(launcher, 1, "a")
    assert "entered" not in frames.trace_of(e, call_raw)
    assert "entered" not in frames.trace_of(e, len)


def test_the_def_line_is_found_past_decorators_and_not_past_a_blank_line(tmp_path):
    src = tmp_path / "k.py"
    src.write_text("@a\n@b(\n  1)\ndef f():\n    pass\n\n@c\n\nx = 1\n")
    assert frames._def_line(str(src), 1) == 4
    assert frames._def_line(str(src), 7) == 7                 # a blank line ends the search: the first line


# ---------------------------------------------------------------------------- Triton's compile errors
class CompilationError(Exception):
    """Triton's name and attributes: the AST node and the @jit function's source."""

    def __init__(self, src, lineno):
        super().__init__("at 2:4: bad")
        self.src, self.node = src, types.SimpleNamespace(lineno=lineno)


JIT_SRC = "def body(x):\n    y = x\n    return nope\n"
JIT = types.SimpleNamespace(fn=types.SimpleNamespace(__globals__={}), src=JIT_SRC, file_name=HERE,
                            def_file_line_number=10, __name__="body")


def _compile():
    raise CompilationError(JIT_SRC, 3)


def test_a_compile_error_becomes_a_jit_frame_at_its_line_of_the_kernels_file_before_the_raising_frame():
    facts = frames.trace_of(_caught(_compile))
    jit = [f for f in facts["frames"] if f["kind"] == "jit"]
    assert jit == [frames._frame(HERE, 12, "body", "jit")]
    assert facts["frames"][-1]["kind"] == "jit"               # the raising frame here is the user's: jit after it


def test_a_compile_error_whose_function_cannot_be_found_adds_no_frame():
    def other():
        raise CompilationError("def elsewhere(): pass\n", 1)
    facts = frames.trace_of(_caught(other))
    assert all(f["kind"] != "jit" for f in facts["frames"])


@pytest.mark.parametrize("name", ["CompilationError", "UnsupportedLanguageConstruct"])
def test_only_triton_compile_errors_are_read_for_a_jit_line(name):
    e = _caught(_compile)
    raw = frames._raw_frames(e)
    renamed = type(name, (Exception,), {})()
    renamed.src, renamed.node = e.src, e.node
    renamed.__traceback__ = e.__traceback__
    assert len(frames._jit_frames(renamed, raw)) == 1
    plain = ValueError()
    plain.src, plain.node = e.src, e.node
    assert frames._jit_frames(plain, raw) == []
