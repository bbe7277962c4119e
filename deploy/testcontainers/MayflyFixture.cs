// Testcontainers for .NET (Testcontainers package, xUnit): mayfly for one test class, ready once
// it logs "waiting for connections". The image is built from mayfly's Containerfile
// (`podman build -t mayfly:local .`) or pulled from where you pushed it.
using DotNet.Testcontainers.Builders;
using DotNet.Testcontainers.Containers;
using MongoDB.Bson;
using MongoDB.Driver;
using Xunit;

public sealed class MayflyFixture : IAsyncLifetime
{
    public IContainer Container { get; } = new ContainerBuilder()
        .WithImage("mayfly:local")
        .WithCommand("--storage", "memory")
        .WithPortBinding(27017, true)
        .WithWaitStrategy(Wait.ForUnixContainer().UntilMessageIsLogged("waiting for connections"))
        .Build();

    public string ConnectionString =>
        $"mongodb://{Container.Hostname}:{Container.GetMappedPublicPort(27017)}/?directConnection=true";

    public Task InitializeAsync() => Container.StartAsync();

    public Task DisposeAsync() => Container.DisposeAsync().AsTask();
}

public class MayflyTest : IClassFixture<MayflyFixture>
{
    private readonly MayflyFixture _mayfly;

    public MayflyTest(MayflyFixture mayfly) => _mayfly = mayfly;

    [Fact]
    public async Task Pings()
    {
        var client = new MongoClient(_mayfly.ConnectionString);
        await client.GetDatabase("admin").RunCommandAsync<BsonDocument>(new BsonDocument("ping", 1));
    }
}
