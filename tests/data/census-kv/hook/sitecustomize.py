"""stage2's workload hook, loaded by Python at start-up as `sitecustomize` (stage2 puts this
file's folder first on the workload's PYTHONPATH). The workload's code is not changed.

What it does is chosen by environment variables that stage2 sets (and records in cmd.txt):

STAGE2_AUTO_NVTX=1
    When transformers is imported, each forward pass of the outermost `PreTrainedModel` is
    marked with an NVTX range `prefill` (more than one new token per sequence) or `decode`
    (one new token), and each `generate()` call with `generate`. An encoder-decoder's encoder
    pass over the prompt is `prefill`, its decoder's passes count the decoder's tokens. A compiled forward (static
    cache: transformers' `get_compiled_call`, CUDA graphs) is marked around the compiled call,
    since nothing runs in Python inside it. Inside each phase range an NVTX mark
    `stage2:tokens batch=B new=N` says how many tokens the pass handled, followed by what the
    pass must read by the model's own numbers (read once per model from its parameters and
    config, never from the GPU): `past=P` tokens per sequence already in the KV cache (plain
    generate() calls: the earlier passes' new tokens), `weights=W` bytes of parameters (the
    input embedding table left out unless the output layer shares it: a lookup reads B rows),
    `kv=K` bytes of KV cache per token per sequence (full attention only; `window=S` where a
    sliding window caps it), and for mixture-of-experts layers `experts=E top_k=T
    expert_weights=X` (X of W are expert weights).
    Speculative decoding (`generate(assistant_model=...)` or `prompt_lookup_num_tokens=...`):
    the target's passes over several new tokens after its first are `verify` (candidate tokens
    checked: no tokens mark on the pass), and a `generate()` call made inside one (the
    assistant drafting) is `draft`, its passes `draft_prefill` and `draft_decode`. After each
    verify step an NVTX mark `stage2:spec proposed=K accepted=A` says how many candidate
    tokens were proposed and how many the target kept, read from the token ids' lengths
    transformers hands its candidate generator (no GPU sync). Each generate() call ends with a
    tokens mark of the tokens its output gained per sequence, so `generate` (and `draft`) have
    a time per generated token, accepted draft tokens included.
STAGE2_AUTO_NVTX_SKIP=K
    The first K `generate()` calls (warm-up: compilation, CUDA graph capture) and the forward
    passes inside them are left unmarked.
STAGE2_RANGE_TIMES=DIR
    The baseline pass (no profiler attached): every NVTX range the workload opens through
    torch.cuda.nvtx (range_push/range_pop, range_start/range_end, range) or the nvtx package
    (push_range/pop_range, start_range/end_range, annotate) is timed with the same clock as
    it opens and closes, one line `name<TAB>start_ns<TAB>end_ns<TAB>tid` per closed range in
    DIR/ranges.<pid>.txt. Ranges opened from C/C++ are not seen.
STAGE2_PY_SAMPLE_HZ=N, STAGE2_PY_SAMPLE_DIR=DIR
    A thread samples the Python stacks of the other threads N times a second into
    DIR/pysamples.<pid>.txt, and every 100 ms emits an NVTX mark `stage2:clock <ns>` holding
    its clock (time.monotonic_ns), so the samples can be placed on the profiler's timeline.

Any failure here is reported once on stderr and leaves the workload running unmarked.
"""

import os
import sys
import threading
import time

_HERE = os.path.dirname(os.path.abspath(__file__))


def _one_line(text):
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")


def _warn(what, err):
    print(f"stage2 hook: {what}: {err!r} (continuing without it)", file=sys.stderr)


def _close_quietly(out, lock):
    """Close a hook's output file at exit; a failure there must not fail the workload."""
    with lock:
        try:
            out.close()
        except Exception:
            pass


def _nvtx():
    torch = sys.modules.get("torch")
    return getattr(getattr(torch, "cuda", None), "nvtx", None)


# ---------------------------------------------------------------------------------------------
# Automatic phases


class _Phases(threading.local):
    depth = 0
    # Inside a marked compiled call, an eager fallback of the wrapped forward is not a new pass.
    in_compiled = False
    # Inside a generate() call left unmarked (warm-up).
    quiet = False

    def __init__(self):
        # The marked generate() calls open on this thread, innermost last.
        self.calls = []


class _Call:
    """One marked generate() call: whether it drafts for an assisted one around it, whether
    it is assisted itself, and how many passes it has made."""

    def __init__(self, draft, assisted):
        self.draft = draft
        self.assisted = assisted
        self.passes = 0
        # Tokens per sequence the model's cache holds before its next pass.
        self.past = 0


_phases = _Phases()
_generate_calls = [0]


def _first_of(args, kwargs, *names):
    """The first of the keyword arguments `names` given, else the first positional one."""
    for name in names:
        value = kwargs.get(name)
        if value is not None:
            return value
    return args[0] if args else None


def _tokens(args, kwargs):
    """(batch, new tokens per sequence) of one forward call, or None when it has no ids. An
    encoder-decoder's pass counts its decoder's tokens when it does not run its encoder (the
    encoder's output given, or no encoder input): generate() runs the encoder once over the
    prompt, then the decoder once per token."""
    x = _first_of(args, kwargs, "input_ids", "inputs_embeds")
    if x is None or kwargs.get("encoder_outputs") is not None:
        decoder = _first_of((), kwargs, "decoder_input_ids", "decoder_inputs_embeds")
        if decoder is not None:
            x = decoder
    shape = getattr(x, "shape", None)
    if shape is None or len(shape) < 2:
        return None
    return int(shape[0]), int(shape[1])


def phase_of(tokens):
    """The range name for a forward pass handling `tokens` = (batch, new tokens)."""
    if tokens is None:
        return "forward"
    return "decode" if tokens[1] == 1 else "prefill"


def phase_in(call, tokens):
    """The range name for a pass inside `call` (a _Call, or None outside generate())."""
    phase = phase_of(tokens)
    if call is None:
        return phase
    if call.draft:
        return "draft_" + phase
    # An assisted call's passes over several tokens after its first check the draft's
    # candidates: not a prompt.
    if call.assisted and call.passes > 0 and phase == "prefill":
        return "verify"
    return phase


_facts = {}


def _kv_per_token(config, itemsize):
    """KV-cache bytes per token per sequence under full attention (` kv=K`, with ` window=S`
    where one sliding window caps every layer), or "" where the layout is another (latent
    attention, layers of mixed kinds) or not told."""
    if getattr(config, "kv_lora_rank", None) or len(set(getattr(config, "layer_types", None) or [])) > 1:
        return ""
    layers = getattr(config, "num_hidden_layers", None)
    heads = getattr(config, "num_attention_heads", None)
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or (
        getattr(config, "hidden_size", 0) // heads if heads else None
    )
    if not (layers and kv_heads and head_dim):
        return ""
    out = f" kv={2 * layers * kv_heads * head_dim * itemsize}"
    window = getattr(config, "sliding_window", None)
    if window and getattr(config, "use_sliding_window", True):
        out += f" window={int(window)}"
    return out


def _census_of(model):
    weights, experts = 0, 0
    for name, p in model.named_parameters():  # a shared parameter once
        n = p.numel() * p.element_size()
        weights += n
        if ".experts." in name:
            experts += n
    table = getattr(model.get_input_embeddings(), "weight", None)
    head = model.get_output_embeddings()
    if table is not None and getattr(head, "weight", None) is not table:
        weights -= table.numel() * table.element_size()
    config = model.config
    config = config.get_text_config() if hasattr(config, "get_text_config") else config
    out = f" weights={weights}" + _kv_per_token(config, model.dtype.itemsize)
    count = next(
        (getattr(config, k) for k in ("num_local_experts", "num_experts", "n_routed_experts")
         if getattr(config, k, None)),
        None,
    )
    top_k = getattr(config, "num_experts_per_tok", None)
    if experts and count and top_k:
        out += f" experts={int(count)} top_k={int(top_k)} expert_weights={experts}"
    return out


def _model_facts(model):
    """The census part of a pass's tokens mark, read once per model (no GPU work)."""
    key = id(model)
    if key not in _facts:
        try:
            _facts[key] = _census_of(model)
        except Exception as err:  # the workload must run even if transformers changed
            _warn("cannot read the model's size", err)
            _facts[key] = ""
    return _facts[key]


def _open(model, args, kwargs):
    nvtx = _nvtx()
    if nvtx is None:
        return False
    tokens = _tokens(args, kwargs)
    call = _phases.calls[-1] if _phases.calls else None
    phase = phase_in(call, tokens)
    past = ""
    if call is not None:
        call.passes += 1
        # An assisted call's cache drops rejected candidates, a draft's outlives its call.
        if not (call.draft or call.assisted):
            past = f" past={call.past}"
        call.past += tokens[1] if tokens is not None else 0
    nvtx.range_push(phase)
    # A verify pass handles candidate tokens, not tokens of the output: no per-token figure.
    if tokens is not None and phase != "verify":
        facts = _model_facts(model)
        nvtx.mark(f"stage2:tokens batch={tokens[0]} new={tokens[1]}{past}{facts}")
    return True


def _close(opened):
    if opened:
        _nvtx().range_pop()


def _patch_transformers(modeling_utils):
    import torch

    Model = modeling_utils.PreTrainedModel
    module_call = torch.nn.Module.__call__
    # Bound once: torch.compile evaluates it to True while tracing, and reads nothing else here.
    compiling = torch.compiler.is_compiling

    def __call__(self, *args, **kwargs):
        # Only the outermost model's pass is a phase; while torch.compile traces this call
        # nothing may run here (the compiled call is marked by its wrapper instead).
        if compiling() or _phases.depth or _phases.in_compiled or _phases.quiet:
            return module_call(self, *args, **kwargs)
        opened = _open(self, args, kwargs)
        _phases.depth += 1
        try:
            return module_call(self, *args, **kwargs)
        finally:
            _phases.depth -= 1
            _close(opened)

    Model.__call__ = __call__

    original_compiled_call = getattr(Model, "get_compiled_call", None)
    if original_compiled_call is not None:

        def get_compiled_call(self, *a, **kw):
            compiled = original_compiled_call(self, *a, **kw)

            def call(*args, **kwargs):
                if _phases.depth or _phases.in_compiled or _phases.quiet:
                    return compiled(*args, **kwargs)
                opened = _open(self, args, kwargs)
                _phases.in_compiled = True
                try:
                    return compiled(*args, **kwargs)
                finally:
                    _phases.in_compiled = False
                    _close(opened)

            return call

        Model.get_compiled_call = get_compiled_call


def _mark_generated(nvtx, model, args, kwargs, result):
    """The tokens one generate() call added to each sequence (its output's length past its
    prompt), as a tokens mark inside its own range: its time per generated token, accepted
    draft tokens included under speculative decoding. Nothing when it cannot be told (an
    encoder-decoder model, a prompt given as embeddings, an output of another shape)."""
    if getattr(getattr(model, "config", None), "is_encoder_decoder", False):
        return
    prompt = _first_of(args, kwargs, "input_ids", "inputs")
    out = getattr(result, "sequences", result)
    p, o = getattr(prompt, "shape", None), getattr(out, "shape", None)
    if p is None or o is None or len(p) != 2 or len(o) != 2:
        return
    batch, new = int(o[0]), int(o[1]) - int(p[1])
    if batch == int(p[0]) and new > 0:
        nvtx.mark(f"stage2:tokens batch={batch} new={new}")


def _ids_length(ids):
    shape = getattr(ids, "shape", None)
    return int(shape[-1]) if shape is not None and len(shape) >= 1 else None


def _watch_candidates(generator):
    """Mark each verify step of an assisted generate() with the candidate tokens the
    generator proposed and how many the target accepted: transformers calls get_candidates with
    the ids so far and, after the verify pass, update_candidate_strategy with the ids it kept,
    which hold the accepted candidates and the target's own next token."""
    get, update = generator.get_candidates, generator.update_candidate_strategy
    last = {}

    def get_candidates(input_ids, *args, **kwargs):
        out = get(input_ids, *args, **kwargs)
        ids = out[0] if isinstance(out, tuple) else out
        before, after = _ids_length(input_ids), _ids_length(ids)
        last.clear()
        if before is not None and after is not None:
            last.update(before=before, proposed=after - before)
        return out

    def update_candidate_strategy(input_ids, *args, **kwargs):
        kept = _ids_length(input_ids)
        nvtx = _nvtx()
        if last and kept is not None and nvtx is not None and not _phases.quiet:
            proposed = last["proposed"]
            accepted = kept - last["before"] - 1
            if proposed > 0 and 0 <= accepted <= proposed:
                nvtx.mark(f"stage2:spec proposed={proposed} accepted={accepted}")
        last.clear()
        return update(input_ids, *args, **kwargs)

    generator.get_candidates = get_candidates
    generator.update_candidate_strategy = update_candidate_strategy


def _patch_candidates(Mixin):
    original = getattr(Mixin, "_get_candidate_generator", None)
    if original is None:
        return

    def _get_candidate_generator(self, *args, **kwargs):
        generator = original(self, *args, **kwargs)
        try:
            _watch_candidates(generator)
        except Exception as err:  # the workload must run even if transformers changed
            _warn("cannot mark speculative decoding's steps", err)
        return generator

    Mixin._get_candidate_generator = _get_candidate_generator


def _patch_generate(generation_utils):
    Mixin = getattr(generation_utils, "GenerationMixin", None)
    original = getattr(Mixin, "generate", None)
    if original is None:
        return
    _patch_candidates(Mixin)

    skip = int(os.environ.get("STAGE2_AUTO_NVTX_SKIP") or 0)

    def generate(self, *args, **kwargs):
        nvtx = _nvtx()
        if nvtx is None or _phases.depth or _phases.quiet:
            return original(self, *args, **kwargs)
        _generate_calls[0] += 1
        if _generate_calls[0] <= skip:
            _phases.quiet = True
            try:
                return original(self, *args, **kwargs)
            finally:
                _phases.quiet = False
        # A call made inside an assisted one is the assistant drafting its candidates.
        draft = any(c.assisted for c in _phases.calls)
        assisted = (
            kwargs.get("assistant_model") is not None
            or bool(kwargs.get("prompt_lookup_num_tokens"))
        )
        nvtx.range_push("draft" if draft else "generate")
        _phases.calls.append(_Call(draft, assisted and not draft))
        try:
            result = original(self, *args, **kwargs)
            _mark_generated(nvtx, self, args, kwargs, result)
            return result
        finally:
            _phases.calls.pop()
            nvtx.range_pop()

    generate.__wrapped__ = original
    generate.__doc__ = original.__doc__
    Mixin.generate = generate


# ---------------------------------------------------------------------------------------------
# Range times without a profiler (the baseline pass)


class _RangeTimes:
    """Each closed range written at once, one write(2) per line: a workload killed by a signal,
    a timeout or os._exit() keeps every range it closed, and a forked child (which writes to
    its own ranges.<pid>.txt) has no buffered parent lines to write again."""

    def __init__(self, folder):
        self.folder = folder
        self.failed = False
        self._open()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._open)

    def _open(self):
        # A new lock too: another thread may have held the parent's at the fork.
        self.lock = threading.Lock()
        self.pid = os.getpid()
        path = os.path.join(self.folder, f"ranges.{self.pid}.txt")
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
        # Ranges the parent had open at the fork are the parent's to close.
        self.stacks = threading.local()
        self.open_ids = {}

    def stack(self):
        s = getattr(self.stacks, "s", None)
        if s is None:
            s = self.stacks.s = []
        return s

    def closed(self, name, start):
        end = time.perf_counter_ns()
        line = f"{_one_line(str(name))}\t{start}\t{end}\t{threading.get_native_id()}\n"
        data = line.encode("utf-8", errors="replace")
        with self.lock:
            if self.failed:
                return
            try:
                os.write(self.fd, data)
            except OSError as err:
                # A full disk: say it once; the workload runs on untimed.
                self.failed = True
                _warn("cannot write NVTX range times", err)

    def push(self, name):
        self.stack().append((name, time.perf_counter_ns()))

    def pop(self):
        s = self.stack()
        if s:
            self.closed(*s.pop())

    def start(self, key, name):
        self.open_ids[key] = (name, time.perf_counter_ns())

    def end(self, key):
        opened = self.open_ids.pop(key, None)
        if opened is not None:
            self.closed(*opened)

    def close(self):
        with self.lock:
            try:
                os.close(self.fd)
            except OSError:
                pass


_times = [None]


def _patch_torch_nvtx(module):
    """Time torch.cuda.nvtx's ranges; `range` uses the module's push/pop, so it is timed too."""
    t = _times[0]
    push, pop = module.range_push, module.range_pop
    start, end = module.range_start, module.range_end

    def range_push(msg):
        t.push(msg)
        return push(msg)

    def range_pop():
        t.pop()
        return pop()

    def range_start(msg):
        rid = start(msg)
        t.start(("torch", rid), msg)
        return rid

    def range_end(range_id):
        t.end(("torch", range_id))
        return end(range_id)

    module.range_push, module.range_pop = range_push, range_pop
    module.range_start, module.range_end = range_start, range_end


def _patch_nvtx_package(module):
    """Time the nvtx package's ranges, annotate (context manager and decorator) included."""
    t = _times[0]
    push, pop = getattr(module, "push_range", None), getattr(module, "pop_range", None)
    start, end = getattr(module, "start_range", None), getattr(module, "end_range", None)
    if push and pop:

        def push_range(message=None, *a, **kw):
            t.push(message)
            return push(message, *a, **kw)

        def pop_range(*a, **kw):
            t.pop()
            return pop(*a, **kw)

        module.push_range, module.pop_range = push_range, pop_range
    if start and end:

        def start_range(message=None, *a, **kw):
            rid = start(message, *a, **kw)
            t.start(("nvtx", id(rid)), message)
            return rid

        def end_range(range_id, *a, **kw):
            t.end(("nvtx", id(range_id)))
            return end(range_id, *a, **kw)

        module.start_range, module.end_range = start_range, end_range
    annotate = getattr(module, "annotate", None)
    enter, exit_ = getattr(annotate, "__enter__", None), getattr(annotate, "__exit__", None)
    if enter and exit_:

        def __enter__(self):
            attrs = getattr(self, "attributes", None)
            message = getattr(getattr(attrs, "message", None), "string", None)
            t.push(message if message is not None else getattr(self, "message", "?"))
            return enter(self)

        def __exit__(self, *exc):
            t.pop()
            return exit_(self, *exc)

        annotate.__enter__, annotate.__exit__ = __enter__, __exit__


_PATCHES = {}
_PHASE_PATCHES = {
    "transformers.modeling_utils": _patch_transformers,
    "transformers.generation.utils": _patch_generate,
}
_TIME_PATCHES = {
    "torch.cuda.nvtx": _patch_torch_nvtx,
    "nvtx": _patch_nvtx_package,
}


class _AfterImport:
    """A meta path finder that runs a patch right after a module has been executed."""

    def find_spec(self, name, path=None, target=None):
        patch = _PATCHES.get(name)
        if patch is None:
            return None
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        execute = loader.exec_module

        def exec_module(module):
            execute(module)
            try:
                patch(module)
            except Exception as err:  # the workload must run even if transformers changed
                _warn(f"cannot mark phases in {name}", err)

        loader.exec_module = exec_module
        return spec


# ---------------------------------------------------------------------------------------------
# Python stack sampling


class _Sampler:
    def __init__(self, hz, folder):
        self.period = 1.0 / hz
        self.path = os.path.join(folder, f"pysamples.{os.getpid()}.txt")
        # Private like the rest of the run directory.
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        self.out = open(fd, "w", encoding="utf-8", errors="replace")
        self.out.write(f"# stage2 python samples pid={os.getpid()} hz={hz}\n")
        self.codes = {}
        self.lock = threading.Lock()
        self.next_clock = 0
        self.stopped = False

    def frame_id(self, code):
        i = self.codes.get(code)
        if i is None:
            i = len(self.codes)
            self.codes[code] = i
            name = getattr(code, "co_qualname", code.co_name)
            # One line per frame: a tab or newline in a file or function name is escaped.
            place = _one_line(f"{code.co_filename}:{code.co_firstlineno}")
            self.out.write(f"F {i} {place}\t{_one_line(name)}\n")
        return i

    def clock(self, now):
        nvtx = _nvtx()
        if nvtx is not None and now >= self.next_clock:
            nvtx.mark(f"stage2:clock {time.monotonic_ns()}")
            self.next_clock = now + 100_000_000

    def sample(self, me):
        frames = sys._current_frames()
        now = time.monotonic_ns()
        natives = {t.ident: t.native_id for t in threading.enumerate()}
        with self.lock:
            for ident, frame in frames.items():
                if ident == me:
                    continue
                ids = []
                while frame is not None and len(ids) < 200:
                    ids.append(self.frame_id(frame.f_code))
                    frame = frame.f_back
                tid = natives.get(ident, 0)
                self.out.write(f"S {now} {tid} {','.join(map(str, ids))}\n")
        self.clock(now)

    def run(self):
        me = threading.get_ident()
        try:
            while not self.stopped:
                time.sleep(self.period)
                self.sample(me)
        except Exception as err:
            _warn("python sampling stopped", err)

    def close(self):
        _close_quietly(self.out, self.lock)


def _start_sampler(hz, folder):
    import atexit

    sampler = _Sampler(hz, folder)
    atexit.register(sampler.close)
    threading.Thread(target=sampler.run, name="stage2-sampler", daemon=True).start()


# ---------------------------------------------------------------------------------------------
# Start-up


def _chain():
    """Run the sitecustomize this file shadows, if there is one further along sys.path."""
    import importlib.machinery
    import importlib.util

    rest = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    while True:
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
        if spec is None or spec.loader is None:
            return
        # Another run's stage2 hook (a pasted cmd.txt line, stage2 inside stage2) is not
        # chained: the two would load each other forever. Look past it.
        if _is_stage2_hook(spec.origin):
            folder = os.path.dirname(os.path.abspath(spec.origin))
            rest = [p for p in rest if os.path.abspath(p or ".") != folder]
            continue
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return


def _is_stage2_hook(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.readline().startswith('"""stage2\'s workload hook')
    except OSError:
        return False


def _install():
    import atexit

    if os.environ.get("STAGE2_AUTO_NVTX") == "1":
        _PATCHES.update(_PHASE_PATCHES)
    folder = os.environ.get("STAGE2_RANGE_TIMES")
    if folder:
        try:
            _times[0] = _RangeTimes(folder)
            atexit.register(_times[0].close)
            _PATCHES.update(_TIME_PATCHES)
        except Exception as err:
            _warn("cannot time NVTX ranges", err)
    if _PATCHES:
        sys.meta_path.insert(0, _AfterImport())
    hz = os.environ.get("STAGE2_PY_SAMPLE_HZ")
    folder = os.environ.get("STAGE2_PY_SAMPLE_DIR")
    if hz and folder:
        try:
            if float(hz) > 0:
                _start_sampler(float(hz), folder)
        except Exception as err:
            _warn("cannot start python sampling", err)


try:
    _install()
except Exception as _err:
    _warn("cannot install", _err)
try:
    _chain()
except Exception as _err:
    _warn("the shadowed sitecustomize failed", _err)
