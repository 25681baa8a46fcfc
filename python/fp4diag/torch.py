"""fp4diag.torch — watch the FP4 quantization statistics of a model's nn.Linear layers while it
trains: every `every` steps, the input X, the weight W and the output gradient dY of each chosen
layer are analysed by the library (fp4diag.analyze: the CLI's numbers, statistics only, never
the tensors) and written as JSON lines, and as scalars to TensorBoard or W&B when asked.

    import fp4diag.torch
    mon = fp4diag.torch.Monitor(model, layers=["*.mlp.*"], every=100, path="fp4.jsonl",
                                format="nvfp4", rht="both")
    for batch in data:
        loss = model(batch).sum(); loss.backward(); opt.step(); opt.zero_grad()
        mon.step()          # the end of one training step
    mon.close()             # removes the hooks, closes the file

Each line is one tensor's entry of the report's "tensors" array (SPEC §9, schema
fp4diag.report/1: name, shape, dtype, axis, results [...]) with three more keys: "step" (the
monitor's step count when it was recorded), "layer" (the module's name) and "role" ("x", "w" or
"dy"); its name is "LAYER.ROLE". Each of its "results" also has Transformer Engine's
"underflows%" and "mse" (fp4diag._te_stats: TE's names and definitions). Numbers are written in full precision (Python's repr). The
tensors are analysed where they are recorded: a CUDA tensor on its GPU by the CUDA kernels,
ordered on torch's current stream, with no synchronisation of the training loop and no copy
to the host (fp4d_analyze_cuda; with a library built without CUDA, copied by .cpu()); a CPU
tensor on the host. The options are parsed once, and the library keeps its CUDA buffers from
call to call; the cost is measured in README.md. Tensors of another dtype than
float32/float16/bfloat16 are analysed as float32.
"""
import fnmatch
import json

import torch as _torch

import fp4diag as _fp4

__all__ = ["Monitor"]

ROLES = ("x", "w", "dy")


def _select(model, layers):
    """[(name, module)] of the nn.Linear modules chosen by `layers`: None = those whose weight
    4-bit recipes quantize (fp4diag.recipe_keeps: the CLI's default selection, so lm_head,
    MoE routers and gates are left out); a string or a list of strings: exact module names or
    fnmatch patterns ("*.mlp.*"; "*" every nn.Linear)."""
    found = [(n, m) for n, m in model.named_modules() if isinstance(m, _torch.nn.Linear)]
    if layers is None:
        return [(n, m) for n, m in found if _fp4.recipe_keeps(n + ".weight") is None]
    pats = [layers] if isinstance(layers, str) else list(layers)
    chosen = [(n, m) for n, m in found if any(n == p or fnmatch.fnmatchcase(n, p) for p in pats)]
    for p in pats:
        if not any(n == p or fnmatch.fnmatchcase(n, p) for n, _ in found):
            raise ValueError("fp4diag.torch: '%s' names no nn.Linear layer of the model" % p)
    return chosen


class Monitor:
    """Hooks on the chosen nn.Linear layers of `model` that record X, W and dY every `every`
    steps (the steps whose count is a multiple of `every`, from `start`).

    layers: None (the nn.Linear layers 4-bit recipes quantize, as the CLI's default selection:
    not lm_head, MoE routers and gates; fp4diag.recipe_keeps), or names / fnmatch patterns of
    modules ("*": every nn.Linear).
    roles: which of "x", "w", "dy" to record.
    path: a JSON-lines file (appended to), or None; `records` keeps the last step's entries.
    tensorboard: a torch.utils.tensorboard SummaryWriter, or a log directory for a new one.
    wandb: True to wandb.log the scalars into the active run (wandb.init first).
    options: the CLI's options as for fp4diag.analyze (default format="nvfp4", rht="both",
    threads=1: the analysis runs on the thread that records, with no OpenMP team left spinning
    beside the training loop; threads=N for large layers on a host with cores to spare); they
    are checked here (ValueError with the CLI's message). The numbers do not depend on threads.
    """

    def __init__(self, model, layers=None, every=100, roles=ROLES, path=None, tensorboard=None,
                 wandb=False, start=0, **options):
        if every < 1:
            raise ValueError("fp4diag.torch: every must be >= 1")
        bad = [r for r in roles if r not in ROLES]
        if bad:
            raise ValueError("fp4diag.torch: unknown role %r (x, w, dy)" % bad[0])
        self.options = dict({"format": "nvfp4", "rht": "both", "threads": 1}, **options)
        self._cfg = _fp4._Config(self.options)  # parsed once; a bad option fails now
        self.every, self.roles, self.count = every, tuple(roles), start
        self.records = []
        self._file = open(path, "a") if path else None
        self._tb = tensorboard
        if isinstance(tensorboard, str):
            from torch.utils.tensorboard import SummaryWriter

            self._tb = SummaryWriter(tensorboard)
        self._wandb = None
        if wandb:
            import wandb as _wandb

            self._wandb = _wandb
        self.layers = _select(model, layers)
        self._hooks = [m.register_forward_hook(self._forward(n)) for n, m in self.layers]

    @property
    def active(self):
        """Whether the current step is recorded."""
        return self.count % self.every == 0

    def _forward(self, name):
        def hook(module, inputs, output):
            if not self.active:  # forward passes without autograd record X and W too
                return
            if "x" in self.roles and inputs:
                self._record(name, "x", inputs[0])
            if "w" in self.roles:
                self._record(name, "w", module.weight)
            if "dy" in self.roles and isinstance(output, _torch.Tensor) and output.requires_grad:
                output.register_hook(lambda g: self._record(name, "dy", g))

        return hook

    def _record(self, layer, role, t):
        t = t.detach()
        if t.dtype not in (_torch.float32, _torch.float16, _torch.bfloat16):
            t = t.float()
        name, sums = "%s.%s" % (layer, role), []
        try:
            e = _fp4._analyze(t, name, self.options, sums, self._cfg)
        except _fp4.DeviceError:  # a CUDA tensor, a library built without CUDA
            if not t.is_cuda:
                raise
            sums = []
            e = _fp4._analyze(t.cpu(), name, self.options, sums, self._cfg)
        for r, (_, err2) in zip(e["results"], sums):
            r.update(_fp4._te_stats(r, err2))
        e["step"], e["layer"], e["role"] = self.count, layer, role
        self.records.append(e)
        if self._file:
            self._file.write(json.dumps(e) + "\n")
        scalars = self.scalars(e)
        if self._tb is not None:
            for k, v in scalars.items():
                self._tb.add_scalar(k, v, self.count)
        if self._wandb is not None and self._wandb.run is not None:
            self._wandb.log(scalars, step=self.count)

    @staticmethod
    def scalars(entry):
        """The entry's statistics as {"fp4diag/LAYER/ROLE/FORMAT[+rht]/STAT": value} (finite
        values only): sqnr_db, alpha, delta, nmse, bucket_ratio_15, bucket_ratio_8, TE's
        underflows% and mse, and the counts' saturated, zero, scale_underflow_blocks and
        zero_blocks."""
        out = {}
        for r in entry["results"]:
            cfg = r["format"] + ("" if r["scale"] == "fp32" else ":" + r["scale"])
            if r["rht"]:
                cfg += "+rht%d" % r["rht"]["size"]
            base = "fp4diag/%s/%s/%s/" % (entry["layer"], entry["role"], cfg)
            for k in ("sqnr_db", "alpha", "delta", "nmse", "bucket_ratio_15", "bucket_ratio_8",
                      "underflows%", "mse"):
                if isinstance(r.get(k), (int, float)):
                    out[base + k] = r[k]
            for k in ("saturated", "zero", "scale_underflow_blocks", "zero_blocks"):
                if isinstance(r.get("counts", {}).get(k), int):
                    out[base + k] = r["counts"][k]
        return out

    def step(self):
        """Call once at the end of every training step."""
        if self._file:
            self._file.flush()
        self.count += 1
        if self.active:
            self.records = []

    def close(self):
        """Remove the hooks; flush and close the JSON-lines file."""
        for h in self._hooks:
            h.remove()
        self._hooks = []
        if self._file:
            self._file.close()
            self._file = None
        if self._tb is not None and hasattr(self._tb, "flush"):
            self._tb.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
