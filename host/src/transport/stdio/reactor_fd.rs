//! The process's stdin or stdout as a non-blocking descriptor polled by tokio's reactor, so the
//! stdio transport reads and writes on the runtime's workers: no thread of its own, no hop to
//! the blocking pool, one wake-up per batch of input.
//!
//! Only descriptors the reactor can poll qualify (pipes, sockets, terminals); a regular file or
//! `/dev/null` cannot be registered, and the caller falls back to blocking threads. The
//! descriptor's original flags are restored when the transport is done with it cleanly, so a
//! terminal shared with a shell is left as it was found.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use rustix::fs::OFlags;
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};

/// A duplicate of one of the process's standard descriptors, registered with the reactor.
#[derive(Debug)]
pub(super) struct ReactorFd {
    fd: AsyncFd<OwnedFd>,
    /// A pipe or a socket: a read that returns less than it asked for has emptied it, so the
    /// next read waits for the reactor instead of failing with `EAGAIN` first (one system call
    /// less per message). A terminal returns one line per read, with more behind it.
    short_read_drains: bool,
}

/// What puts a descriptor's file status flags back as they were before `O_NONBLOCK`.
#[derive(Debug)]
pub(super) struct OriginalFlags {
    fd: OwnedFd,
    flags: OFlags,
}

impl OriginalFlags {
    /// Restores the flags (blocking again, for a terminal shared with a shell).
    pub(super) fn restore(self) {
        if let Err(err) = rustix::fs::fcntl_setfl(&self.fd, self.flags) {
            tracing::debug!(error = %err, "cannot restore the flags of a standard descriptor");
        }
    }
}

impl ReactorFd {
    /// Duplicates `fd`, makes the open file non-blocking and registers it for `interest`;
    /// returns it with what restores its flags.
    ///
    /// # Errors
    /// The descriptor cannot be duplicated, its flags cannot be changed, or the reactor cannot
    /// poll it (a regular file, `/dev/null`): the flags are put back before returning.
    pub(super) fn new(fd: BorrowedFd<'_>, interest: Interest) -> io::Result<(ReactorFd, OriginalFlags)> {
        let owned = fd.try_clone_to_owned()?;
        let kind = rustix::fs::FileType::from_raw_mode(rustix::fs::fstat(&owned)?.st_mode);
        let short_read_drains = matches!(kind, rustix::fs::FileType::Fifo | rustix::fs::FileType::Socket);
        let original = OriginalFlags { fd: fd.try_clone_to_owned()?, flags: rustix::fs::fcntl_getfl(&owned)? };
        rustix::fs::fcntl_setfl(&owned, original.flags | OFlags::NONBLOCK)?;
        // `OwnedFd` owns its descriptor for the `AsyncFd`'s whole life, which is all the
        // unsafe `register_with_interest` asks; the safe constructor is deprecated only because
        // an arbitrary `AsRawFd` could not promise it.
        #[allow(deprecated)]
        let registered = AsyncFd::with_interest(owned, interest);
        match registered {
            Ok(fd) => Ok((ReactorFd { fd, short_read_drains }, original)),
            Err(err) => {
                original.restore();
                Err(err)
            }
        }
    }
}

impl AsFd for ReactorFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.get_ref().as_fd()
    }
}

impl AsyncRead for ReactorFd {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        loop {
            let mut guard = ready!(self.fd.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            let asked = unfilled.len();
            match guard.try_io(|fd| retry_interrupted(|| rustix::io::read(fd.get_ref(), &mut *unfilled))) {
                Ok(Ok(n)) => {
                    if self.short_read_drains && n > 0 && n < asked {
                        // Data written after this read raises a new edge, which the reactor
                        // records whatever this does.
                        guard.clear_ready();
                    }
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(err)) => return Poll::Ready(Err(err)),
                Err(_would_block) => {}
            }
        }
    }
}

impl AsyncWrite for ReactorFd {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, bytes: &[u8]) -> Poll<io::Result<usize>> {
        loop {
            let mut guard = ready!(self.fd.poll_write_ready(cx))?;
            match guard.try_io(|fd| retry_interrupted(|| rustix::io::write(fd.get_ref(), bytes))) {
                Ok(result) => return Poll::Ready(result),
                Err(_would_block) => {}
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// Runs a system call again when a signal interrupted it.
fn retry_interrupted<T>(mut call: impl FnMut() -> rustix::io::Result<T>) -> io::Result<T> {
    loop {
        match call() {
            Err(rustix::io::Errno::INTR) => {}
            other => return other.map_err(io::Error::from),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn a_pipe_is_read_and_written_on_the_reactor_and_its_flags_are_restored() {
        let (read_end, write_end) = std::io::pipe().expect("pipe");
        let (mut reader, reader_flags) = ReactorFd::new(read_end.as_fd(), Interest::READABLE).expect("a pipe can be polled");
        let (mut writer, writer_flags) = ReactorFd::new(write_end.as_fd(), Interest::WRITABLE).expect("a pipe can be polled");
        assert!(rustix::fs::fcntl_getfl(&read_end).expect("flags").contains(OFlags::NONBLOCK));
        // More than a pipe holds: the writer must wait for the reader, not fail or block.
        let payload = vec![b'x'; 1 << 20];
        let expected = payload.clone();
        let writing = tokio::spawn(async move {
            writer.write_all(&payload).await.expect("write");
            writer_flags.restore();
        });
        let mut received = vec![0u8; expected.len()];
        tokio::time::timeout(std::time::Duration::from_secs(10), reader.read_exact(&mut received)).await.expect("the read finishes").expect("read");
        writing.await.expect("writer");
        assert_eq!(received, expected);
        reader_flags.restore();
        assert!(!rustix::fs::fcntl_getfl(&read_end).expect("flags").contains(OFlags::NONBLOCK), "the original flags are back");
    }

    #[tokio::test]
    async fn a_pipe_emptied_by_a_short_read_still_wakes_its_reader_for_the_next_message() {
        let (read_end, write_end) = std::io::pipe().expect("pipe");
        let (mut reader, _flags) = ReactorFd::new(read_end.as_fd(), Interest::READABLE).expect("a pipe can be polled");
        assert!(reader.short_read_drains, "a pipe is emptied by a short read");
        let mut writer = write_end;
        let mut buf = [0u8; 64];
        for message in [&b"first\n"[..], b"second\n", b"third\n"] {
            std::io::Write::write_all(&mut writer, message).expect("write");
            let n = tokio::time::timeout(std::time::Duration::from_secs(10), reader.read(&mut buf)).await.expect("the reader wakes").expect("read");
            assert_eq!(&buf[..n], message);
        }
        // Written while nobody waits, after the readiness was cleared.
        std::io::Write::write_all(&mut writer, b"late\n").expect("write");
        tokio::task::yield_now().await;
        let n = tokio::time::timeout(std::time::Duration::from_secs(10), reader.read(&mut buf)).await.expect("the reader wakes").expect("read");
        assert_eq!(&buf[..n], b"late\n");
    }

    #[tokio::test]
    async fn a_regular_file_cannot_be_registered_and_keeps_its_flags() {
        let file = tempfile::tempfile().expect("temp file");
        let before = rustix::fs::fcntl_getfl(&file).expect("flags");
        assert!(ReactorFd::new(file.as_fd(), Interest::READABLE).is_err(), "epoll refuses regular files");
        assert_eq!(rustix::fs::fcntl_getfl(&file).expect("flags"), before);
    }
}
