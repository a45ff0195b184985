"""dynjit.profiler: the op profiler (torch.profiler).

`profile(activities=[ProfilerActivity.CPU], record_shapes=..., schedule=..., on_trace_ready=...)`
records through the autograd profiler (dynjit.autograd.profiler): the same events, reports
and Chrome trace. With a `schedule`, `step()` moves through wait / warmup / active steps and
only active steps are recorded; `on_trace_ready(prof)` is called when an active span ends.
"""
import enum

from .autograd import profiler as _autograd_profiler
from .autograd.profiler import record_function, EventList  # noqa: F401

__all__ = ["profile", "record_function", "ProfilerActivity", "ProfilerAction", "schedule",
           "supported_activities"]


class ProfilerActivity(enum.Enum):
    CPU = 0
    CUDA = 1
    XPU = 2
    MTIA = 3


def supported_activities():
    return {ProfilerActivity.CPU}


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """The action of each step: skip_first steps, then cycles of wait, warmup and active
    steps (the last active step of a cycle saves), `repeat` cycles (0: no end)."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError("Invalid profiler schedule arguments")

    def schedule_fn(step):
        if step < 0:
            raise AssertionError(f"Invalid step {step}")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        num_steps = wait + warmup + active
        if repeat > 0 and step // num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE
    return schedule_fn


def _always_record(step):
    return ProfilerAction.RECORD


class profile:
    """Records the ops run inside it (or inside its active steps, with a schedule)."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False,
                 use_cuda=None, custom_trace_id_callback=None):
        activities = set(activities) if activities is not None else supported_activities()
        unsupported = activities - supported_activities()
        if unsupported:
            raise RuntimeError(f"dynjit's profiler supports ProfilerActivity.CPU only, got "
                               f"{sorted(a.name for a in unsupported)}: dynjit runs on the CPU")
        self.activities = activities
        self.schedule = schedule if schedule is not None else _always_record
        self.on_trace_ready = on_trace_ready
        self.record_shapes = record_shapes
        self.with_stack = with_stack
        if profile_memory or with_flops or with_modules:
            raise NotImplementedError(
                "dynjit's profiler records op times, input shapes and stacks only: "
                "profile_memory, with_flops and with_modules are not supported")
        self.step_num = 0
        self._recorder = None
        self._events = []
        self.profiler = None       # the autograd profiler of the last finished span

    def _start_recording(self):
        self._recorder = _autograd_profiler.profile(record_shapes=self.record_shapes,
                                                     with_stack=self.with_stack)
        self._recorder.__enter__()

    def _stop_recording(self, save):
        rec, self._recorder = self._recorder, None
        rec.__exit__(None, None, None)
        self._events.extend(rec.function_events)
        if save:
            events = EventList(sorted(self._events, key=lambda e: (e.time_range.start, -e.time_range.end)))
            self._events = []
            self.profiler = rec
            rec.function_events = events
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)

    def _apply(self, action):
        recording = action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        if recording and self._recorder is None:
            self._start_recording()

    def start(self):
        self._apply(self.schedule(self.step_num))

    def stop(self):
        if self._recorder is not None:
            self._stop_recording(save=True)

    def step(self):
        """End the current step: a RECORD_AND_SAVE step hands its trace to on_trace_ready."""
        action = self.schedule(self.step_num)
        self.step_num += 1
        if self._recorder is not None:
            nxt = self.schedule(self.step_num)
            if action is ProfilerAction.RECORD_AND_SAVE or nxt not in (
                    ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
                self._stop_recording(save=True)
        self._apply(self.schedule(self.step_num))

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def _finished(self):
        if self.profiler is None:
            raise RuntimeError("Profiler didn't finish running")
        return self.profiler

    def events(self):
        return self._finished().function_events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        return self._finished().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path):
        return self._finished().export_chrome_trace(path)

    def table(self, *args, **kwargs):
        return self._finished().table(*args, **kwargs)
