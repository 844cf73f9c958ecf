"""Modules: loading an image once per device, looking kernels up, bad images."""

from __future__ import annotations

import pytest

import gompute as g


def test_module_lists_its_kernels(kernels, kernel_names):
    assert kernel_names <= set(kernels.function_names)
    assert not any(name.endswith("_gompute_arity") for name in kernels.function_names)  # data, not functions


def test_loading_the_same_image_twice_loads_it_once(compute, kernels, host_image):
    before = g.runtime.stats()
    again = compute.load_module(host_image)
    from_bytearray = compute.load_module(bytearray(host_image))
    after = g.runtime.stats()
    assert again.id == kernels.id == from_bytearray.id
    assert after["modules_loaded"] == before["modules_loaded"]
    assert after["module_cache_hits"] == before["module_cache_hits"] + 2


def test_a_second_compute_on_the_device_shares_the_module(compute, kernels, host_image):
    other = type(compute).init_device(compute.ordinal)
    try:
        assert other.load_module(host_image).id == kernels.id
    finally:
        other.deinit()


def test_unknown_kernel_names_the_kernels_the_module_has(kernels, kernel_names):
    with pytest.raises(g.KernelNotFound, match="no kernel named 'scale_reluu'") as info:
        kernels.get_kernel("scale_reluu")
    for name in kernel_names:
        assert name in str(info.value)
    assert isinstance(info.value, LookupError)


def test_an_arity_symbol_is_not_a_kernel(kernels):
    with pytest.raises(g.KernelNotFound):
        kernels.get_kernel("scale_relu_gompute_arity_typo")


@pytest.mark.parametrize(
    "image, match",
    [(b"not a shared object", "ELF"), (b"\x7fELF" + b"\x00" * 200, "cannot load"), (b"", "ELF")],
    ids=["text", "truncated-elf", "empty"],
)
def test_an_invalid_image_is_refused(compute, image, match):
    if compute.backend is not g.Backend.host:
        pytest.skip("what counts as an invalid image differs per driver; checked on host")
    with pytest.raises(g.ModuleLoadFailed, match=match):
        compute.load_module(image)


@pytest.mark.parametrize("image", [42, None, [1, 2]], ids=repr)
def test_a_module_image_must_be_bytes(compute, image):
    with pytest.raises(g.ArgumentError, match="bytes"):
        compute.load_module(image)


def test_module_deinit_releases_the_handle_only(compute, kernels, host_image):
    module = compute.load_module(host_image)
    module.deinit()
    with pytest.raises(g.InvalidHandle, match="deinit"):
        module.get_kernel("add")
    with pytest.raises(g.InvalidHandle):
        module.function_names
    assert kernels.get_kernel("add").name == "add"  # the loaded module is still there for others
    module.deinit()  # idempotent


def test_with_deinits_a_module(compute, kernels, host_image):
    with compute.load_module(host_image) as module:
        assert module.get_kernel("gate").arity == 3
    with pytest.raises(g.InvalidHandle):
        module.get_kernel("gate")


def test_two_different_images_are_two_modules(compute, kernels, build_host):
    image = build_host(
        "#include <gompute/host_launch.h>\nGOMPUTE_HOST_ARITY(only_one, 0);\nGOMPUTE_HOST_KERNEL(only_one) {}\n"
    ).read_bytes()
    before = g.runtime.stats()["modules_loaded"]
    other = compute.load_module(image)
    assert g.runtime.stats()["modules_loaded"] == before + 1
    assert other.id != kernels.id
    assert other.function_names == ["only_one"]
    with pytest.raises(g.KernelNotFound, match="it has: only_one"):
        other.get_kernel("scale_relu")
    other.get_kernel("only_one").launch(1, 1, 0, [])
    compute.synchronize()
