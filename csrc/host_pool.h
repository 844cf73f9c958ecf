// The host backend's execution machinery: a persistent worker pool that runs a
// grid's blocks, and ordered queues that play the part of GPU streams.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace gompute {

// Runs range bodies on `threads - 1` pool threads plus the calling thread. Several
// callers (one per stream) may run jobs at once; each job's caller works on it too,
// so a job always makes progress. Between jobs a pool thread spins for `spin` before it
// sleeps, and a caller spins that long for the pool's last chunks before it sleeps: a
// loop of launches then hands work over without waking a thread, since a wake-up costs
// more than a small job takes.
class WorkerPool {
 public:
  WorkerPool(unsigned threads, std::chrono::microseconds spin);
  ~WorkerPool();

  unsigned threads() const { return static_cast<unsigned>(workers_.size()) + 1; }
  // Calls body(begin, end) over disjoint chunks covering [0, total); returns when all are done.
  void run(uint64_t total, const std::function<void(uint64_t, uint64_t)>& body);

 private:
  struct Job;
  void work_loop();
  static void work_on(Job& job);

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> jobs_;
  std::atomic<uint64_t> posted_{0};  // jobs ever posted: what a spinning thread watches
  const std::chrono::microseconds spin_;
  std::vector<std::thread> workers_;
  bool stopping_ = false;
};

// An ordered queue of tasks run by its own thread. A task submitted to an idle queue
// with `may_run_inline` runs on the submitting thread instead, which saves a thread
// hand-off for small work; order is kept either way. Like the pool's, the queue's thread
// spins for `spin` for the next task before it sleeps, and drain() spins that long for the
// queue to empty, so a launch followed by a synchronize costs no thread wake-up.
class TaskQueue {
 public:
  using Task = std::function<void()>;
  explicit TaskQueue(std::chrono::microseconds spin);
  ~TaskQueue();  // drains the queue, then joins

  void submit(Task task, bool may_run_inline);
  // Runs `fn` on the calling thread if the queue is idle (keeping order); false otherwise.
  template <typename Fn>
  bool try_run_inline(Fn&& fn) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!tasks_.empty() || busy_) return false;
      busy_ = true;
      idle_.store(false, std::memory_order_relaxed);
    }
    InlineRun done{this};  // finished even if fn throws: a stream left busy would hang every wait on it
    fn();
    return true;
  }
  void drain();  // returns when every task submitted so far has run
  bool idle();

 private:
  void run_loop();
  void finish_inline();
  struct InlineRun {
    TaskQueue* queue;
    ~InlineRun() { queue->finish_inline(); }
  };
  void set_idle();  // under mu_: idle_ from tasks_ and busy_

  std::mutex mu_;
  std::condition_variable work_cv_, idle_cv_;
  std::deque<Task> tasks_;
  bool busy_ = false;
  bool stopping_ = false;
  std::atomic<uint64_t> submitted_{0};  // tasks ever queued: what the spinning thread watches
  std::atomic<bool> idle_{true};        // no task queued or running: what drain() spins on
  const std::chrono::microseconds spin_;
  std::thread thread_;
};

}  // namespace gompute
