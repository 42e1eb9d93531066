//! Connecting the processes of a multi-process search, as timely's own
//! networking does (process I connects to every process before it, sending
//! its index as a big-endian `u64`, and accepts every process after it),
//! but quietly: timely prints its waits on stdout, where process 0 prints
//! the report. Waits are bounded: a process that cannot reach the others
//! in [`PATIENCE`] fails with the address it waited for.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use timely::communication::Hooks;
use timely::communication::allocator::zero_copy::initialize::initialize_networking_from_sockets;
use timely::communication::allocator::{AllocatorBuilder, ProcessBuilder};

/// How long a process waits for the others (pods and nodes of one job
/// may start minutes apart).
pub(super) const PATIENCE: Duration = Duration::from_secs(900);

/// The sockets to every other process, in process order (`None` at
/// `me`).
fn sockets(addresses: &[String], me: usize) -> Result<Vec<Option<TcpStream>>, String> {
    let deadline = Instant::now() + PATIENCE;
    let listener = TcpListener::bind(&addresses[me])
        .map_err(|e| format!("process {me} cannot listen on {}: {e}", addresses[me]))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("process {me}: {e}"))?;
    let later = addresses.len() - me - 1;
    let accepting = std::thread::spawn(move || -> Result<Vec<Option<TcpStream>>, String> {
        let mut got: Vec<Option<TcpStream>> = (0..later).map(|_| None).collect();
        while got.iter().any(Option::is_none) {
            match listener.accept() {
                Ok((mut stream, _)) => {
                    let fail = |e: std::io::Error| format!("process {me}: {e}");
                    stream.set_nonblocking(false).map_err(fail)?;
                    stream.set_nodelay(true).map_err(fail)?;
                    let mut index = [0u8; 8];
                    stream.read_exact(&mut index).map_err(fail)?;
                    let from = usize::try_from(u64::from_be_bytes(index)).unwrap_or(usize::MAX);
                    let slot = from
                        .checked_sub(me + 1)
                        .and_then(|i| got.get_mut(i))
                        .ok_or_else(|| format!("process {me}: a peer said it is process {from}"))?;
                    *slot = Some(stream);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if Instant::now() > deadline {
                        return Err(format!(
                            "process {me}: not every later process connected within {} s",
                            PATIENCE.as_secs()
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => return Err(format!("process {me}: {e}")),
            }
        }
        Ok(got)
    });
    let mut out = Vec::with_capacity(addresses.len());
    for (index, address) in addresses.iter().enumerate().take(me) {
        let stream = loop {
            match TcpStream::connect(address) {
                Ok(stream) => break stream,
                Err(e) if Instant::now() > deadline => {
                    return Err(format!(
                        "process {me} could not reach process {index} at {address} within {} s: {e}",
                        PATIENCE.as_secs()
                    ));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(200)),
            }
        };
        let fail = |e: std::io::Error| format!("process {me}: {e}");
        stream.set_nodelay(true).map_err(fail)?;
        (&stream)
            .write_all(&(me as u64).to_be_bytes())
            .map_err(fail)?;
        out.push(Some(stream));
    }
    out.push(None);
    out.extend(
        accepting
            .join()
            .map_err(|_| format!("process {me}: the accepting thread panicked"))??,
    );
    Ok(out)
}

/// timely's allocators for `threads` workers of process `me`, connected
/// to every other process, and the guard that keeps the network threads.
pub(super) fn allocators(
    addresses: &[String],
    me: usize,
    threads: usize,
) -> Result<(Vec<AllocatorBuilder>, Box<dyn std::any::Any + Send>), String> {
    let sockets = sockets(addresses, me)?;
    let hooks = Hooks::default();
    let process =
        ProcessBuilder::new_typed_vector(threads, hooks.refill.clone(), hooks.spill.clone());
    let (builders, guard) =
        initialize_networking_from_sockets(process, sockets, me, threads, hooks)
            .map_err(|e| format!("process {me}: timely's networking: {e}"))?;
    Ok((
        builders.into_iter().map(AllocatorBuilder::Tcp).collect(),
        Box::new(guard),
    ))
}
