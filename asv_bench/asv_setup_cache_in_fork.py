"""ASV plugin (``"plugins"`` in ``asv.conf.json``): ``setup_cache`` in a fork of the server.

With ``launch_method = "forkserver"`` ASV runs every benchmark in a fork of one server
process that has imported the suite once, but it still computes each ``setup_cache`` in
a new interpreter (``benchmark.py setup_cache ...``), which imports numpy, scikit-learn,
torch and the package again: about 35 such start-ups in a quick run of this suite, the
largest single cost of the CI smoke stage. This plugin, loaded by the ``asv`` command,
asks the fork server to compute the cache instead: it sends an ordinary ``run`` request
whose benchmark id carries :data:`PREFIX`, and the server side
(``benchmarks/_common.py``, installed only in the fork server) runs ASV's own
``setup_cache`` entry point in the fork, which writes ``cache.pickle`` into the cache
directory exactly as the fresh interpreter would. The benchmarks receive the same cache;
nothing they measure changes.

Whenever the fork does not produce the cache (an older or newer ASV without the hooks
this relies on, or the ``spawn`` launch method), the plugin falls back to ASV's own
fresh-interpreter ``setup_cache``, so a failure here costs time, never a result.
"""

import os
import tempfile

# the same strings as ``_SETUP_CACHE_PREFIX`` and ``_SETUP_CACHE_MARKER`` in
# ``benchmarks/_common.py``
PREFIX = "sklearn-cispa-setup-cache:"
# written into the cache directory by the server-side hook before it runs the setup_cache
MARKER = ".setup_cache_in_fork"


def setup():
    """Patch ASV's fork server (called by ASV's plugin manager when it loads the plugin)."""
    try:
        from asv import runner
    except ImportError:  # pragma: no cover - an ASV without the runner module
        return
    server_cls = getattr(runner, "ForkServer", None)
    if server_cls is None or getattr(server_cls, "_sklearn_cispa_patched", False):
        return
    spawn_setup_cache = server_cls.create_setup_cache

    def create_setup_cache(self, benchmark_id, timeout, params_str):
        cache_dir = tempfile.mkdtemp()
        fd, result_file = tempfile.mkstemp()
        os.close(fd)
        try:
            out, errcode = self.run(
                name=PREFIX + benchmark_id,
                params_str=params_str,
                profile_path="None",
                result_file_name=result_file,
                timeout=timeout,
                cwd=cache_dir,
            )
        except Exception:  # the server protocol changed: ASV's own way
            out, errcode = "", -1
        finally:
            os.remove(result_file)
        if errcode == 0 and os.path.isfile(os.path.join(cache_dir, "cache.pickle")):
            return cache_dir, None
        hook_ran = os.path.isfile(os.path.join(cache_dir, MARKER))
        _remove_tree(cache_dir)
        if hook_ran:  # the setup_cache itself failed or timed out in the fork
            if errcode == -256:
                out += f"\nasv: setup_cache timed out (timeout {timeout}s)"
            return None, f"{out}\nasv: setup_cache failed (exit status {errcode})".strip()
        # the server does not know the prefix (its hook is missing): ASV's own way
        return spawn_setup_cache(self, benchmark_id, timeout, params_str)

    server_cls.create_setup_cache = create_setup_cache
    server_cls._sklearn_cispa_patched = True


def _remove_tree(path):
    import shutil

    shutil.rmtree(path, ignore_errors=True)
