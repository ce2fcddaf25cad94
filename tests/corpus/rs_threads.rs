// rs_threads: std::thread::spawn and join, Arc<Mutex<..>>, an mpsc channel and scoped threads.
use std::io::Read;
use std::sync::{mpsc, Arc, Mutex};
use std::thread;

fn mix(x: u64) -> u64 {
    let x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    x ^ (x >> 29)
}

fn seed(s: &str) -> u64 {
    s.bytes()
        .fold(1469598103934665603u64, |h, b| (h ^ b as u64).wrapping_mul(1099511628211))
}

fn work(seed: u64, i: u64) -> u64 {
    (0..100000).fold(seed.wrapping_add(i), |x, _| mix(x)) >> 32
}

fn main() {
    let mut req = String::new();
    std::io::stdin().read_to_string(&mut req).expect("read stdin");
    let req = req.trim_end_matches('\n').to_string();
    let seed = seed(&req);
    println!("rs_threads: request \"{}\"", req);

    let shared = Arc::new(Mutex::new(Vec::new()));
    let handles: Vec<_> = (0..8u64)
        .map(|i| {
            let shared = Arc::clone(&shared);
            thread::spawn(move || {
                let v = work(seed, i);
                shared.lock().unwrap().push((i, v));
                i + 1
            })
        })
        .collect();
    let joined = handles
        .into_iter()
        .enumerate()
        .map(|(i, h)| h.join().unwrap() == i as u64 + 1)
        .filter(|ok| *ok)
        .count();
    let mut results = shared.lock().unwrap().clone();
    results.sort();
    println!("threads joined with their own value: {} of 8", joined);
    for (i, v) in &results {
        println!("thread {}: {}", i, v);
    }
    let serial = results.iter().all(|(i, v)| *v == work(seed, *i));
    println!("equal to a serial run: {}", serial);

    let (tx, rx) = mpsc::channel();
    for p in 0..4u64 {
        let tx = tx.clone();
        thread::spawn(move || {
            for k in 0..1000u64 {
                tx.send(mix(seed ^ (p << 32 | k)) >> 40).unwrap();
            }
        });
    }
    drop(tx);
    let (n, sum) = rx.iter().fold((0u64, 0u64), |(n, s), v| (n + 1, s + v));
    println!("mpsc: {} values received, sum {}", n, sum);

    let mut halves = [0u64; 2];
    thread::scope(|s| {
        for (i, h) in halves.iter_mut().enumerate() {
            s.spawn(move || *h = work(seed, 100 + i as u64));
        }
    });
    println!("scoped threads: {} {}", halves[0], halves[1]);
}
