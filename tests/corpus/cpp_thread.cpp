// cpp_thread: a vector of std::threads behind a start gate, std::mutex and std::condition_variable.
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "req.h"

namespace
{
const int nthreads = 8;

std::mutex mu;
std::condition_variable gate_cv, done_cv;
bool open_gate;
int done;
std::map<int, uint64_t> results;
uint64_t seed;

uint64_t work(int i)
{
	uint64_t x = seed + static_cast<uint64_t>(i) * 7919;
	for (int k = 0; k < 100000; k++)
		x = mix(x);
	return x >> 32;
}

void run(int i)
{
	{
		std::unique_lock<std::mutex> lk(mu);
		gate_cv.wait(lk, [] { return open_gate; });
	}
	uint64_t v = work(i);
	std::lock_guard<std::mutex> lk(mu);
	results[i] = v;
	if (++done == nthreads)
		done_cv.notify_one();
}
} // namespace

int main()
{
	char req[256];
	// the threads start during the initialisation and wait at the gate for the request
	std::vector<std::thread> threads;
	for (int i = 0; i < nthreads; i++)
		threads.emplace_back(run, i);
	if (read_req(req, sizeof(req)) < 0)
		return 1;
	{
		std::lock_guard<std::mutex> lk(mu);
		seed = req_seed(req);
		open_gate = true;
	}
	gate_cv.notify_all();
	{
		std::unique_lock<std::mutex> lk(mu);
		done_cv.wait(lk, [] { return done == nthreads; });
	}
	for (auto &t : threads)
		t.join();
	std::printf("cpp_thread: request \"%s\"\n", req);
	bool same = true;
	for (const auto &[i, v] : results) {
		std::printf("thread %d: %llu\n", i, static_cast<unsigned long long>(v));
		same = same && v == work(i);
	}
	std::printf("results: %zu, equal to a serial run: %s\n", results.size(),
		    same ? "yes" : "no");
	return 0;
}
