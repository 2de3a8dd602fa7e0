# The agent's launcher and the supervisor of every attempt it starts (chosen when the host has
# perl; launcher.sh otherwise). One long-lived process: for each attempt the agent sends on stdin,
# it forks a child that joins the attempt's cgroups, enters the run folder, takes the job's umask
# and environment, leads a session of its own and execs the job: one fork and one exec a task, as
# `xargs` spends, where the shell launcher spends two forks and two execs (`setsid` is a program).
# As the job's parent it reaps it: the exit code (128+N for signal N, as a shell reports) goes
# into the attempt folder's `exit`, the CPU time of the job and of what it waited for into `times`
# when the agent asked for it, and a line to the agent on stdout while the agent is there to hear.
# When stdin closes (the agent went away), no more attempts start; the launcher stays until its
# last job has ended and is recorded, then exits.
#
# An attempt on stdin: a count N, then N fields, each ended by a NUL byte (a field may hold any
# other byte: an environment value, an argument, a newline). The fields:
#   dir   the attempt folder, relative to the launcher's working folder (the attempts folder)
#   times "1" when the job's CPU time is to be written to `times` (an attempt without a cgroup)
#   kind  "exec", followed by: cwd umask cgroupCount cgroupProcsFile... envCount NAME=value... argv...
#         (umask octal, or empty for the launcher's own), or "script": the attempt's job.sh runs in
#         a shell of its own, which makes the job's session (a job run as another account).
use strict;
use warnings;
use POSIX qw(:sys_wait_h :signal_h setsid _exit);
use Fcntl qw(O_RDWR O_CREAT O_WRONLY O_APPEND O_NONBLOCK F_GETFL F_SETFL);
use Errno qw(ENOENT EINTR);

{
    my $flags = fcntl( STDOUT, F_GETFL, 0 );
    fcntl( STDOUT, F_SETFL, $flags | O_NONBLOCK ) if defined $flags;
}
# Only the launcher: children put them back before they exec (an ignored signal is inherited).
$SIG{PIPE} = 'IGNORE';
$SIG{HUP}  = 'IGNORE';
$SIG{INT}  = 'IGNORE';

my %attempt_of;    # pid => [dir, times wanted]
my $child_signals = POSIX::SigSet->new(SIGCHLD);
my @child_times = (times)[ 2, 3 ];

# Writes `text` over the start of a file without truncating it first (a kept folder's pid and exit
# hold a blank line until written; the agent reads a file whole once it ends in a newline).
sub record {
    my ( $path, $text ) = @_;
    sysopen( my $fh, $path, O_RDWR | O_CREAT, 0666 ) or return;
    syswrite( $fh, $text );
    truncate( $fh, length $text );
    close $fh;
}

# A line to the agent, in one write, or none: stdout does not block (a pipe takes a short write
# whole or not at all), so that an agent that does not read (frozen) never holds up the reaping of
# jobs and the recording of their exits; the agent finds an exit it was not told of in the folder.
sub tell_agent {
    my ($line) = @_;
    syswrite( STDOUT, $line );
}

# Shell `times` output (its second line is what the agent reads): minutes and seconds.
sub shell_time {
    my ($seconds) = @_;
    my $minutes = int( $seconds / 60 );
    return sprintf( "%dm%.3fs", $minutes, $seconds - 60 * $minutes );
}

# Records the end of every child that has ended. Children are reaped one at a time, so that the
# children's CPU time the kernel adds to this process at each reaping is that child's alone.
sub reap {
    my ($flags) = @_;
    for (;;) {
        my $pid = waitpid( -1, $flags );
        last if $pid <= 0;
        my $status = $?;
        my @now   = ( times() )[ 2, 3 ];
        my @spent = ( $now[0] - $child_times[0], $now[1] - $child_times[1] );
        @child_times = @now;
        my $attempt = delete $attempt_of{$pid};
        next unless $attempt;
        my ( $dir, $times ) = @$attempt;
        my $code = ( $status & 127 ) ? 128 + ( $status & 127 ) : $status >> 8;
        record( "$dir/times", "0m0.000s 0m0.000s\n" . shell_time( $spent[0] ) . " " . shell_time( $spent[1] ) . "\n" )
          if $times;
        record( "$dir/exit", "$code\n" );
        tell_agent("exited $code $dir\n");
    }
}

$SIG{CHLD} = sub { reap(WNOHANG) };

sub field {
    local $/ = "\0";
    my $value = <STDIN>;
    return undef unless defined $value;
    chomp $value;
    return $value;
}

sub run_job {
    my ( $dir, $times, $kind, @rest ) = @_;
    open( STDIN,  '<',  '/dev/null' )    or _exit(126);
    open( STDOUT, '>>', "$dir/stdout" ) or _exit(126);
    open( STDERR, '>>', "$dir/stderr" ) or _exit(126);
    $SIG{$_} = 'DEFAULT' for qw(PIPE HUP INT CHLD);
    sigprocmask( SIG_UNBLOCK, $child_signals );
    if ( $kind eq 'script' ) {
        # job.sh makes the job's session itself (a job run as another account).
        { no warnings 'exec'; exec { '/bin/sh' } 'sh', "$dir/job.sh"; }
        _exit(127);
    }
    my ( $cwd, $umask, $cgroups, @more ) = @rest;
    my @cgroup_files = splice( @more, 0, $cgroups );
    # First, so that everything the job makes is in its cgroups.
    for my $file (@cgroup_files) {
        sysopen( my $fh, $file, O_WRONLY | O_APPEND ) or _exit(125);
        syswrite( $fh, "0\n" ) or _exit(125);
        close $fh or _exit(125);
    }
    chdir $cwd or _exit(126);
    # As a shell's `cd` leaves them (job.sh's, under the shell launcher).
    $ENV{PWD} = $cwd;
    delete $ENV{OLDPWD};
    umask( oct $umask ) if $umask ne '';
    my $count = shift @more;
    # Over the environment it inherits from the launcher (the agent's), as job.sh's exports are.
    for my $variable ( splice( @more, 0, $count ) ) {
        my $at = index( $variable, '=' );
        $ENV{ substr( $variable, 0, $at ) } = substr( $variable, $at + 1 );
    }
    setsid();
    my @argv = @more;
    { no warnings 'exec'; exec { $argv[0] } @argv; }
    my $missing = $! == ENOENT;
    print STDERR "steward: cannot run $argv[0]: $!\n";
    _exit( $missing ? 127 : 126 );
}

for (;;) {
    my $count = field();
    last unless defined $count;
    my @fields;
    for ( 1 .. $count ) {
        my $value = field();
        last unless defined $value;
        push @fields, $value;
    }
    last unless @fields == $count && $count >= 3;
    my $dir = $fields[0];
    # The child's end is not reaped before it is known whose it is.
    sigprocmask( SIG_BLOCK, $child_signals );
    my $pid = fork();
    if ( !defined $pid ) {
        sigprocmask( SIG_UNBLOCK, $child_signals );
        record( "$dir/exit", "126\n" );
        tell_agent("exited 126 $dir\n");
        next;
    }
    run_job(@fields) if $pid == 0;
    $attempt_of{$pid} = [ $dir, $fields[1] eq '1' ];
    record( "$dir/pid", "$pid\n" );
    tell_agent("started $pid $dir\n");
    sigprocmask( SIG_UNBLOCK, $child_signals );
}

# The agent went away: every job still running is seen to its end.
$SIG{CHLD} = 'DEFAULT';
reap(0);
