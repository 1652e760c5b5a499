# SPDX-License-Identifier: Apache-2.0
"""kiln as a JAX backend. JAX imports this module (a `jax_plugins` namespace package) and
calls initialize(), which registers libkiln_pjrt.so under the name "kiln":

    JAX_PLATFORMS=kiln python -c 'import jax; print(jax.jit(lambda x: x + 1)(1.0))'

Without JAX_PLATFORMS, JAX's CPU backend stays the default and kiln's devices are
jax.devices("kiln").
"""
import os

# Below JAX's CPU backend (0): kiln is used when asked for (JAX_PLATFORMS=kiln, or a kiln
# device), never by surprise.
PRIORITY = -100


def library_path():
    return os.environ.get("KILN_PJRT_LIBRARY") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "libkiln_pjrt.so")


def initialize():
    from jax._src import xla_bridge

    # JAX emits donation (tf.aliasing_output) only for the platforms it lists; kiln
    # consumes donated buffers, so it joins them.
    try:
        from jax._src.interpreters import mlir
        if "kiln" not in mlir._platforms_with_donation:
            mlir._platforms_with_donation.append("kiln")
    except (ImportError, AttributeError):
        pass
    xla_bridge.register_plugin("kiln", priority=PRIORITY, library_path=library_path())
