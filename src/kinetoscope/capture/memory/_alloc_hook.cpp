// kinetoscope's CPU allocator hook: records every allocation and free of CPU tensor storage.
//
// PyTorch has no allocation history for CPU memory, but c10 lets a process replace its CPU
// allocator (c10::SetCPUAllocator). While recording, this module installs an allocator that
// forwards to the one it replaces and records, for each allocation and free: the address,
// the size, the time (CLOCK_REALTIME ns, the clock of the framework trace) and, at
// allocation, the Python stack (torch's CapturedTraceback, the same capture CUDA's memory
// history uses). Entries go to a ring of at most `max_entries`; the oldest are overwritten.
//
// Built once per torch version by kinetoscope.capture.memory.alloc_hook with the C++ compiler;
// the module is an ordinary CPython extension (no pybind11).

#include <Python.h>
#include <pthread.h>
#include <time.h>

#include <c10/core/CPUAllocator.h>
#include <torch/csrc/profiler/combined_traceback.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace torch {
// Defined in libtorch_python: registers the Python stack capture with CapturedTraceback.
void installCapturedTracebackPython();
}  // namespace torch

namespace {

using Stack = std::shared_ptr<torch::CapturedTraceback>;

enum Action : int { kAlloc = 0, kFree = 1 };

struct Entry {
  int64_t time_ns;
  uint64_t addr;
  uint64_t size;
  int action;
  Stack stack;
};

struct Live {
  uint64_t size;
  int64_t time_ns;
  Stack stack;
};

struct State {
  std::mutex mu;
  std::vector<Entry> ring;
  size_t max_entries = 0;
  size_t next = 0;  // oldest entry once the ring is full
  uint64_t total = 0;
  bool recording = false;
  bool python_stacks = false;
  bool cpp_stacks = false;
  std::unordered_map<void*, Live> live;
};

// Never freed: deleters of recorded blocks may run at any time, even at interpreter exit.
State* const g = new State();
c10::DeleterFnPtr g_inner_delete = nullptr;

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void push_locked(Entry&& entry) {
  g->total++;
  if (g->ring.size() < g->max_entries) {
    g->ring.push_back(std::move(entry));
    return;
  }
  g->ring[g->next] = std::move(entry);
  g->next = (g->next + 1) % g->max_entries;
}

void recording_delete(void* ptr) {
  Stack released;  // destroyed outside the lock
  {
    std::lock_guard<std::mutex> lock(g->mu);
    auto it = g->live.find(ptr);
    if (it != g->live.end()) {
      if (g->recording) {
        push_locked(Entry{now_ns(), uint64_t(ptr), it->second.size, kFree, it->second.stack});
      }
      released = std::move(it->second.stack);
      g->live.erase(it);
    }
  }
  g_inner_delete(ptr);
}

Stack gather_stack() {
  bool python, cpp;
  {
    std::lock_guard<std::mutex> lock(g->mu);
    python = g->python_stacks;
    cpp = g->cpp_stacks;
  }
  // Never under our lock: gathering may take the GIL.
  return python ? torch::CapturedTraceback::gather(true, false, cpp) : Stack();
}

struct RecordingAllocator final : c10::Allocator {
  c10::Allocator* inner = nullptr;

  c10::DataPtr allocate(size_t n) override {
    c10::DataPtr inner_ptr = inner->allocate(n);
    void* data = inner_ptr.get();
    if (data == nullptr) {
      return inner_ptr;
    }
    Stack stack = gather_stack();
    int64_t time_ns = now_ns();
    {
      std::lock_guard<std::mutex> lock(g->mu);
      g->live[data] = Live{n, time_ns, stack};
      if (g->recording) {
        push_locked(Entry{time_ns, uint64_t(data), n, kAlloc, std::move(stack)});
      }
    }
    c10::Device device = inner_ptr.device();
    inner_ptr.release_context();
    return c10::DataPtr(data, data, &recording_delete, device);
  }

  c10::DeleterFnPtr raw_deleter() const override {
    return &recording_delete;
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
};

RecordingAllocator* const g_allocator = new RecordingAllocator();

// The hook forwards frees to the replaced allocator's raw deleter, so that allocator must
// hand out "simple" pointers (context == data, deleter == raw_deleter()), as c10's default does.
bool hands_out_simple_pointers(c10::Allocator* allocator) {
  c10::DeleterFnPtr deleter = allocator->raw_deleter();
  if (deleter == nullptr) {
    return false;
  }
  c10::DataPtr probe = allocator->allocate(64);
  return probe.get() == probe.get_context() && probe.get_deleter() == deleter;
}

bool install() {
  c10::Allocator* current = c10::GetCPUAllocator();
  if (current != g_allocator) {
    if (!hands_out_simple_pointers(current)) {
      PyErr_SetString(PyExc_RuntimeError,
                      "the CPU allocator in use does not hand out plain pointers, so it cannot be wrapped");
      return false;
    }
    g_allocator->inner = current;
    g_inner_delete = current->raw_deleter();
    c10::SetCPUAllocator(g_allocator, 0);
  }
  if (c10::GetCPUAllocator() != g_allocator) {
    PyErr_SetString(PyExc_RuntimeError, "another CPU allocator with a higher priority is installed");
    return false;
  }
  return true;
}

PyObject* start(PyObject*, PyObject* args) {
  Py_ssize_t max_entries;
  int python_stacks, cpp_stacks;
  if (!PyArg_ParseTuple(args, "npp", &max_entries, &python_stacks, &cpp_stacks)) {
    return nullptr;
  }
  if (max_entries < 1) {
    PyErr_SetString(PyExc_ValueError, "max_entries must be at least 1");
    return nullptr;
  }
  torch::installCapturedTracebackPython();
  {
    std::lock_guard<std::mutex> lock(g->mu);
    if (!g->recording) {
      g->ring.clear();
      g->next = 0;
      g->total = 0;
    }
    g->max_entries = size_t(max_entries);
    g->ring.reserve(std::min<size_t>(g->max_entries, size_t(1) << 16));
    g->python_stacks = python_stacks != 0;
    g->cpp_stacks = cpp_stacks != 0;
    g->recording = true;
  }
  if (!install()) {
    std::lock_guard<std::mutex> lock(g->mu);
    g->recording = false;
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyObject* stop(PyObject*, PyObject*) {
  if (g_allocator->inner != nullptr && c10::GetCPUAllocator() == g_allocator) {
    c10::SetCPUAllocator(g_allocator->inner, 0);
  }
  std::vector<Entry> dropped;
  std::unordered_map<void*, Live> forgotten;
  {
    std::lock_guard<std::mutex> lock(g->mu);
    g->recording = false;
    g->python_stacks = false;
    dropped.swap(g->ring);
    forgotten.swap(g->live);
    g->next = 0;
  }
  Py_RETURN_NONE;
}

struct Copy {
  std::vector<Entry> entries;
  std::vector<std::pair<void*, Live>> live;
  uint64_t total = 0;
  bool recording = false;
};

Copy copy_state() {
  Copy copy;
  std::lock_guard<std::mutex> lock(g->mu);
  size_t n = g->ring.size();
  copy.entries.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    copy.entries.push_back(g->ring[(g->next + i) % n]);
  }
  copy.live.assign(g->live.begin(), g->live.end());
  copy.total = g->total;
  copy.recording = g->recording;
  return copy;
}

// Assigns each distinct stack an index into the list handed to torch::symbolize.
struct StackIndex {
  std::vector<torch::CapturedTraceback*> stacks;
  std::unordered_map<torch::CapturedTraceback*, long> index;

  long of(const Stack& stack) {
    if (!stack) {
      return -1;
    }
    auto [it, added] = index.emplace(stack.get(), long(stacks.size()));
    if (added) {
      stacks.push_back(stack.get());
    }
    return it->second;
  }
};

PyObject* entries_list(const std::vector<Entry>& entries, StackIndex& stacks) {
  PyObject* list = PyList_New(Py_ssize_t(entries.size()));
  for (size_t i = 0; list != nullptr && i < entries.size(); ++i) {
    const Entry& e = entries[i];
    PyList_SET_ITEM(list, Py_ssize_t(i),
                    Py_BuildValue("(iKKLl)", e.action, (unsigned long long)e.addr, (unsigned long long)e.size,
                                  (long long)e.time_ns, stacks.of(e.stack)));
  }
  return list;
}

PyObject* live_list(const std::vector<std::pair<void*, Live>>& live, StackIndex& stacks) {
  PyObject* list = PyList_New(Py_ssize_t(live.size()));
  for (size_t i = 0; list != nullptr && i < live.size(); ++i) {
    const auto& [ptr, block] = live[i];
    PyList_SET_ITEM(list, Py_ssize_t(i),
                    Py_BuildValue("(KKLl)", (unsigned long long)uint64_t(ptr), (unsigned long long)block.size,
                                  (long long)block.time_ns, stacks.of(block.stack)));
  }
  return list;
}

PyObject* frames_lists(const torch::SymbolizedTracebacks& symbolized, PyObject** tracebacks) {
  PyObject* frames = PyList_New(Py_ssize_t(symbolized.all_frames.size()));
  for (size_t i = 0; frames != nullptr && i < symbolized.all_frames.size(); ++i) {
    const auto& f = symbolized.all_frames[i];
    PyList_SET_ITEM(frames, Py_ssize_t(i),
                    Py_BuildValue("(ssK)", f.filename.c_str(), f.funcname.c_str(), (unsigned long long)f.lineno));
  }
  *tracebacks = PyList_New(Py_ssize_t(symbolized.tracebacks.size()));
  for (size_t i = 0; *tracebacks != nullptr && i < symbolized.tracebacks.size(); ++i) {
    const auto& tb = symbolized.tracebacks[i];
    PyObject* indices = PyList_New(Py_ssize_t(tb.size()));
    for (size_t j = 0; indices != nullptr && j < tb.size(); ++j) {
      PyList_SET_ITEM(indices, Py_ssize_t(j), PyLong_FromUnsignedLongLong(tb[j]));
    }
    PyList_SET_ITEM(*tracebacks, Py_ssize_t(i), indices);
  }
  return frames;
}

// snapshot() -> (entries, live, frames, tracebacks, total, recording)
//   entries:    [(action, addr, size, time_ns, stack index)], oldest first; action 0 alloc, 1 free
//   live:       [(addr, size, time_ns, stack index)], blocks allocated while recording, not yet freed
//   frames:     [(filename, function, line)]
//   tracebacks: [[frame index, ...]] per stack index, innermost frame first
PyObject* snapshot(PyObject*, PyObject*) {
  Copy copy = copy_state();
  StackIndex stacks;
  PyObject* entries = entries_list(copy.entries, stacks);
  PyObject* live = live_list(copy.live, stacks);
  torch::SymbolizedTracebacks symbolized = torch::symbolize(stacks.stacks);
  PyObject* tracebacks = nullptr;
  PyObject* frames = frames_lists(symbolized, &tracebacks);
  if (entries == nullptr || live == nullptr || frames == nullptr || tracebacks == nullptr) {
    Py_XDECREF(entries);
    Py_XDECREF(live);
    Py_XDECREF(frames);
    Py_XDECREF(tracebacks);
    return nullptr;
  }
  return Py_BuildValue("(NNNNKO)", entries, live, frames, tracebacks, (unsigned long long)copy.total,
                       copy.recording ? Py_True : Py_False);
}

void atfork_prepare() { g->mu.lock(); }
void atfork_parent() { g->mu.unlock(); }
void atfork_child() {
  g->mu.unlock();
  g->recording = false;  // a forked child records nothing until it starts its own history
}

PyMethodDef methods[] = {
    {"start", start, METH_VARARGS, "start(max_entries, python_stacks, cpp_stacks): install the hook and record"},
    {"stop", stop, METH_NOARGS, "stop recording, restore the replaced allocator and drop the history"},
    {"snapshot", snapshot, METH_NOARGS, "(entries, live, frames, tracebacks, total, recording)"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_kinetoscope_alloc_hook",
                          "Records CPU tensor-storage allocations and frees.", -1, methods};

}  // namespace

PyMODINIT_FUNC PyInit__kinetoscope_alloc_hook() {
  pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
  return PyModule_Create(&module_def);
}
