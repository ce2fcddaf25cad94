// cpp_async: std::async with std::launch::async, futures, a std::promise and a std::packaged_task.
#include <cstdint>
#include <cstdio>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "req.h"

namespace
{
uint64_t partial(uint64_t seed, int i)
{
	uint64_t x = seed ^ static_cast<uint64_t>(i);
	uint64_t sum = 0;
	for (int k = 0; k < 100000; k++) {
		x = mix(x);
		sum += x >> 44;
	}
	return sum;
}
} // namespace

int main()
{
	char req[256];
	if (read_req(req, sizeof(req)) < 0)
		return 1;
	uint64_t seed = req_seed(req);
	std::printf("cpp_async: request \"%s\"\n", req);

	std::vector<std::future<uint64_t>> parts;
	for (int i = 0; i < 8; i++)
		parts.push_back(std::async(std::launch::async, partial, seed, i));
	uint64_t sum = 0, want = 0;
	for (int i = 0; i < 8; i++) {
		sum += parts[i].get();
		want += partial(seed, i);
	}
	std::printf("sum of 8 async parts: %llu, equal to a serial run: %s\n",
		    static_cast<unsigned long long>(sum), sum == want ? "yes" : "no");

	std::promise<std::string> promise;
	std::future<std::string> answer = promise.get_future();
	std::thread setter(
	    [&promise, &req] { promise.set_value(std::string("Hello, ") + req + "!"); });
	std::printf("promise kept by another thread: %s\n", answer.get().c_str());
	setter.join();

	auto failing =
	    std::async(std::launch::async, []() -> int { throw std::runtime_error("boom"); });
	try {
		failing.get();
		std::printf("no exception\n");
	} catch (const std::runtime_error &e) {
		std::printf("exception carried by the future: %s\n", e.what());
	}

	std::packaged_task<size_t(const std::string &)> task(
	    [](const std::string &s) { return s.size(); });
	std::future<size_t> len = task.get_future();
	std::thread runner(std::move(task), std::string(req));
	std::printf("packaged_task on a thread: request length %zu\n", len.get());
	runner.join();
	return 0;
}
