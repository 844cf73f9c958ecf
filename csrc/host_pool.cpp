#include "host_pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace gompute {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

// Spins until done() or `limit` has passed; whether done() came true. Past the first few
// microseconds (a loop of launches hands over its next one within them) it yields the core at
// each look: a spinning thread must not keep a core from a thread that has work, such as the
// one about to hand it the next task, when there are more threads than cores.
constexpr std::chrono::microseconds kPauseOnly{5};

template <typename Done>
bool spin_until(Done done, std::chrono::microseconds limit) {
  if (limit.count() <= 0) return done();
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    const auto spent = std::chrono::steady_clock::now() - start;
    if (spent >= limit) return done();
    if (spent >= kPauseOnly) std::this_thread::yield();
  }
}

}  // namespace

struct WorkerPool::Job {
  const std::function<void(uint64_t, uint64_t)>* body;
  uint64_t total;
  uint64_t grain;
  std::atomic<uint64_t> next{0};
  std::atomic<uint64_t> done{0};
  std::mutex mu;
  std::condition_variable finished;
};

WorkerPool::WorkerPool(unsigned threads, std::chrono::microseconds spin) : spin_(spin) {
  for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this] { work_loop(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void WorkerPool::work_on(Job& job) {
  for (;;) {
    uint64_t begin = job.next.fetch_add(job.grain);
    if (begin >= job.total) return;
    uint64_t end = std::min(begin + job.grain, job.total);
    (*job.body)(begin, end);
    if (job.done.fetch_add(end - begin) + (end - begin) == job.total) {
      std::lock_guard<std::mutex> lock(job.mu);
      job.finished.notify_all();
    }
  }
}

void WorkerPool::work_loop() {
  uint64_t seen = 0;  // jobs posted when this thread last took one
  for (;;) {
    spin_until([&] { return posted_.load(std::memory_order_acquire) != seen; }, spin_);
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      for (;;) {
        // Jobs with every chunk handed out: nobody else needs to find them.
        while (!jobs_.empty() && jobs_.front()->next.load() >= jobs_.front()->total) jobs_.pop_front();
        if (stopping_) return;
        if (!jobs_.empty()) break;
        cv_.wait(lock);
      }
      seen = posted_.load(std::memory_order_relaxed);
      job = jobs_.front();
    }
    work_on(*job);
  }
}

void WorkerPool::run(uint64_t total, const std::function<void(uint64_t, uint64_t)>& body) {
  if (total == 0) return;
  // A few chunks per thread balance uneven blocks without much hand-out traffic.
  const uint64_t chunks = uint64_t(threads()) * 4;
  const uint64_t grain = std::max<uint64_t>(1, (total + chunks - 1) / chunks);
  if (workers_.empty() || grain >= total) {
    body(0, total);
    return;
  }
  auto job = std::make_shared<Job>();
  job->body = &body;
  job->total = total;
  job->grain = grain;
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(job);
    posted_.fetch_add(1, std::memory_order_release);
  }
  cv_.notify_all();
  work_on(*job);
  if (spin_until([&] { return job->done.load(std::memory_order_acquire) == job->total; }, spin_)) return;
  std::unique_lock<std::mutex> lock(job->mu);
  job->finished.wait(lock, [&] { return job->done.load() == job->total; });
}

TaskQueue::TaskQueue(std::chrono::microseconds spin) : spin_(spin), thread_([this] { run_loop(); }) {}

TaskQueue::~TaskQueue() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    idle_cv_.wait(lock, [this] { return tasks_.empty() && !busy_; });
    stopping_ = true;
    submitted_.fetch_add(1, std::memory_order_release);  // ends the thread's spin
  }
  work_cv_.notify_all();
  thread_.join();
}

void TaskQueue::set_idle() { idle_.store(tasks_.empty() && !busy_, std::memory_order_release); }

void TaskQueue::submit(Task task, bool may_run_inline) {
  std::unique_lock<std::mutex> lock(mu_);
  if (may_run_inline && tasks_.empty() && !busy_) {
    busy_ = true;
    set_idle();
    lock.unlock();
    InlineRun done{this};
    task();
    return;
  }
  tasks_.push_back(std::move(task));
  set_idle();
  submitted_.fetch_add(1, std::memory_order_release);
  work_cv_.notify_one();
}

void TaskQueue::finish_inline() {
  std::lock_guard<std::mutex> lock(mu_);
  busy_ = false;
  set_idle();
  if (!tasks_.empty()) work_cv_.notify_one();
  idle_cv_.notify_all();
}

void TaskQueue::drain() {
  if (spin_until([this] { return idle_.load(std::memory_order_acquire); }, spin_)) return;
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [this] { return tasks_.empty() && !busy_; });
}

bool TaskQueue::idle() {
  std::lock_guard<std::mutex> lock(mu_);
  return tasks_.empty() && !busy_;
}

void TaskQueue::run_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (tasks_.empty() && !stopping_) {
      const uint64_t seen = submitted_.load(std::memory_order_relaxed);
      lock.unlock();
      spin_until([&] { return submitted_.load(std::memory_order_acquire) != seen; }, spin_);
      lock.lock();
    }
    work_cv_.wait(lock, [this] { return stopping_ || (!tasks_.empty() && !busy_); });
    if (stopping_) return;  // the destructor drained the queue first
    Task task = std::move(tasks_.front());
    tasks_.pop_front();
    busy_ = true;
    set_idle();
    lock.unlock();
    task();
    lock.lock();
    busy_ = false;
    set_idle();
    idle_cv_.notify_all();
  }
}

}  // namespace gompute
