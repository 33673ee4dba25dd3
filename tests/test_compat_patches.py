"""`viz.compat.Patches`: the one way viz replaces methods on transformers' classes (the
server's probes use it), and puts every original back."""

import pytest

from viz.compat import Patches


class Base:
    def greet(self):
        return "base"


class Child(Base):
    def own(self):
        return "own"

    @staticmethod
    def static():
        return "static"

    @classmethod
    def named(cls):
        return cls.__name__


def test_a_patch_is_put_back_as_it_was():
    originals = dict(vars(Child))
    with Patches() as patches:
        patches.set(Child, "own", lambda self: "patched")
        patches.set(Child, "greet", lambda self: "patched greet")  # inherited, not its own
        patches.set(Child, "static", staticmethod(lambda: "patched static"))
        patches.set(Child, "named", classmethod(lambda cls: "patched named"))
        assert len(patches) == 4
        c = Child()
        assert (c.own(), c.greet(), Child.static(), Child.named()) == (
            "patched",
            "patched greet",
            "patched static",
            "patched named",
        )
    assert dict(vars(Child)) == originals  # the inherited name is gone again, not copied
    assert "greet" not in vars(Child) and Child().greet() == "base"
    assert isinstance(vars(Child)["static"], staticmethod) and Child.named() == "Child"


def test_a_name_patched_twice_ends_as_it_began_and_an_error_still_restores():
    with pytest.raises(RuntimeError, match="inside the block"):
        with Patches() as patches:
            patches.set(Child, "own", lambda self: "first")
            patches.set(Child, "own", lambda self: "second")
            assert Child().own() == "second"
            raise RuntimeError("inside the block")
    assert Child().own() == "own" and len(patches) == 0


def test_a_missing_name_is_refused_and_nothing_is_patched():
    patches = Patches()
    with pytest.raises(
        AttributeError, match="'Child' has no 'gone' to patch: transformers' internals moved"
    ):
        patches.set(Child, "gone", lambda self: None)
    assert len(patches) == 0 and not hasattr(Child, "gone")
