// The fake libcuda's device memory (tests/fakes/fake_libcuda.cpp): memory the host cannot touch
// outside the driver's own work on it, as a GPU's memory is out of a host thread's reach.
//
// Each allocation is a mapping of its own, PROT_NONE while no device work runs, so that a host
// read or write of a device pointer between driver calls (NumPy over a device address, a
// memcpy where a cuMemcpy belongs) is a SIGSEGV at the faulting access. Device work is what the
// streams' workers run that reads or writes device memory: a copy's bytes landing, a kernel's
// grid. While any of it runs, on any stream of any device, every allocation is readable and
// writable: a launch's kernel may reach any allocation through its arguments, whose sizes the
// fake does not know, so per-allocation bookkeeping would have nothing to key on.
//
// Limits: a host touch that happens while some stream's work runs (not merely queued: the
// workers' delays are outside) is not caught, nor is one by a kernel of the host backend. A
// test that means to catch a touch makes it with no device work running.
//
// FAKE_CUDA_ADDRESSABLE=1 leaves every allocation readable and writable, for debugging.
#ifndef FAKE_DEVICE_MEMORY_H
#define FAKE_DEVICE_MEMORY_H

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <mutex>

namespace fake_device {

class Memory {
 public:
  // Bytes of a new allocation (page-aligned, zero-filled), or nullptr.
  void* allocate(size_t n) {
    const size_t bytes = rounded(n);
    void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    mappings_[p] = bytes;
    if (open()) mprotect(p, bytes, PROT_READ | PROT_WRITE);
    return p;
  }
  void release(void* p) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = mappings_.find(p);
    if (it == mappings_.end()) return;
    munmap(p, it->second);
    mappings_.erase(it);
  }

  // Device work on the memory, for as long as it lives: every allocation is addressable.
  class Work {
   public:
    explicit Work(Memory& m) : m_(m) { m_.enter(); }
    ~Work() { m_.leave(); }
    Work(const Work&) = delete;
    Work& operator=(const Work&) = delete;

   private:
    Memory& m_;
  };

 private:
  static size_t rounded(size_t n) {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    return (n + page - 1) / page * page;
  }
  bool open() const { return working_ > 0 || addressable_; }
  // Protection changes happen under mu_, with the count: a worker that finishes the last work
  // and one that starts new work cannot interleave their mprotect calls.
  void enter() {
    std::lock_guard<std::mutex> lock(mu_);
    if (working_++ == 0 && !addressable_) protect(PROT_READ | PROT_WRITE);
  }
  void leave() {
    std::lock_guard<std::mutex> lock(mu_);
    if (--working_ == 0 && !addressable_) protect(PROT_NONE);
  }
  void protect(int prot) {
    for (auto& [p, bytes] : mappings_) mprotect(p, bytes, prot);
  }

  std::mutex mu_;
  std::map<void*, size_t> mappings_;
  int working_ = 0;
  const bool addressable_ = [] {
    const char* v = std::getenv("FAKE_CUDA_ADDRESSABLE");
    return v && std::atoi(v) == 1;
  }();
};

// A launch's dynamic shared memory: `bytes` whose end meets a PROT_NONE page, so that a kernel
// reading or writing past the sharedMemBytes it was launched with faults there rather than
// reading another block's bytes. The start keeps the 16-byte alignment of CUDA's dynamic shared
// memory, so up to 15 bytes past the end go unseen. No bytes: no memory at all (nullptr).
class SharedScratch {
 public:
  explicit SharedScratch(size_t bytes) {
    if (bytes == 0) return;
    const size_t page = size_t(sysconf(_SC_PAGESIZE)), padded = (bytes + 15) / 16 * 16;
    size_ = (padded + page - 1) / page * page + page;
    void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    base_ = static_cast<unsigned char*>(p);
    mprotect(base_ + size_ - page, page, PROT_NONE);
    data_ = base_ + size_ - page - padded;
  }
  ~SharedScratch() {
    if (base_) munmap(base_, size_);
  }
  SharedScratch(const SharedScratch&) = delete;
  SharedScratch& operator=(const SharedScratch&) = delete;
  void* data() const { return data_; }
  bool failed(size_t bytes) const { return bytes && !data_; }

 private:
  unsigned char* base_ = nullptr;
  unsigned char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace fake_device

#endif  // FAKE_DEVICE_MEMORY_H
