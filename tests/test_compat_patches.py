"""`viz.compat.Patches`: the one way viz replaces methods on transformers' classes (the
server's probes use it), and puts every original back; `viz.compat.Hooks`: the one way viz
hooks a module, every hook removed when its block ends."""

from pathlib import Path

import pytest
import torch

from viz.compat import Hooks, Patches

VIZ = Path(__file__).resolve().parent.parent / "viz"


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


# ---- Hooks ---------------------------------------------------------------------------------------
def test_hooks_see_each_call_and_are_all_removed_after_an_error():
    layer = torch.nn.Linear(2, 2)
    seen = []
    with pytest.raises(RuntimeError, match="inside the block"):
        with Hooks() as hooks:
            hooks.before(layer, lambda m, args: seen.append("before"))
            hooks.after(layer, lambda m, args, out: seen.append("after"))
            assert len(hooks) == 2
            layer(torch.ones(1, 2))
            raise RuntimeError("inside the block")
    assert seen == ["before", "after"] and len(hooks) == 0
    assert not layer._forward_pre_hooks and not layer._forward_hooks
    layer(torch.ones(1, 2))  # nothing left to call
    assert seen == ["before", "after"]


def test_an_always_call_hook_runs_after_a_forward_that_raised():
    class Fails(torch.nn.Module):
        def forward(self, x):
            raise ValueError("the forward failed")

    module, seen = Fails(), []
    with Hooks() as hooks:
        hooks.after(module, lambda m, args, out: seen.append("always"), always_call=True)
        hooks.after(module, lambda m, args, out: seen.append("plain"))
        with pytest.raises(ValueError, match="the forward failed"):
            module(torch.ones(1))
    assert seen == ["always"]


def test_no_module_but_compat_registers_a_hook_itself():
    """Every hook goes through `Hooks` (it removes them); a probe proves the scan finds one."""

    def registering(text):
        return "register_forward_hook(" in text or "register_forward_pre_hook(" in text

    assert registering("h = m.register_forward_pre_hook(f)")
    found = sorted(
        str(p.relative_to(VIZ))
        for p in VIZ.rglob("*.py")
        if p.name != "compat.py" and registering(p.read_text(encoding="utf-8"))
    )
    assert found == []
